// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restfake "k8s.io/client-go/rest/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/shoal-dev/shoal/internal/devfleet"
)

// AgentUser is the user the in-memory clusters' SelfSubjectReview names
// (the agent gives it its member rights in each queue namespace).
const AgentUser = "system:serviceaccount:" + devfleet.AgentNamespace + ":shoal-agent"

// watchBuffer is the event buffer of each watch of the fake clientsets. The
// fake object tracker panics when a watcher's buffer is full (client-go's
// watch.DefaultChanSize, 100); a gang of 64 members makes a few hundred pod
// events at once, which a busy machine may not drain in time.
const watchBuffer = 8192

func init() {
	if watch.DefaultChanSize < watchBuffer {
		watch.DefaultChanSize = watchBuffer
	}
}

// Workload is one in-memory workload cluster.
type Workload struct {
	// Name is the cluster's federation name; Profile its devfleet profile.
	Name    string
	Profile *devfleet.Profile
	// Fake is the object store every client of the cluster shares.
	Fake *fake.Clientset
	// Client is Fake as the agent gets it (with a discovery that answers /readyz).
	Client kubernetes.Interface
	// Nodes are the node names, in order.
	Nodes []string
	// version is the last resourceVersion given out; mu serialises updates.
	version atomic.Int64
	mu      sync.Mutex
}

func (w *Workload) nextVersion() string { return strconv.FormatInt(w.version.Add(1), 10) }

// checkVersion gives an update the optimistic concurrency of an API
// server: an update that names a resourceVersion other than the stored
// one is refused with a Conflict, and each stored write gets a new
// resourceVersion (the fake tracker keeps what it is given), on which the
// agent's read-modify-write loops rely.
func (w *Workload) checkVersion(a k8stesting.Action) (bool, runtime.Object, error) {
	u := a.(k8stesting.UpdateAction)
	m, err := metav1ObjectOf(u.GetObject())
	if err != nil {
		return false, nil, nil
	}
	w.mu.Lock() // one check-and-write at a time: the tracker stores after this reactor returns
	defer w.mu.Unlock()
	cur, err := w.Fake.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
	if err != nil {
		return false, nil, nil // the tracker answers NotFound
	}
	cm, err := metav1ObjectOf(cur)
	if err != nil {
		return false, nil, nil
	}
	if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	m.SetResourceVersion(w.nextVersion())
	if err := w.Fake.Tracker().Update(a.GetResource(), u.GetObject(), a.GetNamespace()); err != nil {
		return true, nil, err
	}
	obj, err := w.Fake.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
	return true, obj, err
}

// uids numbers the objects the fake API servers create, as UIDs.
var uids atomic.Int64

// NewWorkload builds a cluster of n nodes of profile p (devfleet.BuildNodes:
// the labels, capacity and topology of `shoal dev`), each Ready, with the
// kube-system namespace (the agent registers with its UID) and the agent's
// namespace. Creates get a UID, a creation time and a name from
// generateName, as an API server gives them.
func NewWorkload(name, region string, p *devfleet.Profile, n int) (*Workload, error) {
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: types.UID("ks-" + name)}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: devfleet.AgentNamespace, UID: types.UID("ns-" + name)}},
	}
	w := &Workload{Name: name, Profile: p}
	now := metav1.Now()
	for _, node := range devfleet.BuildNodes(name, region, p, n) {
		node.UID = types.UID(fmt.Sprintf("node-%d", uids.Add(1)))
		node.CreationTimestamp = now
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
		objs = append(objs, node)
		w.Nodes = append(w.Nodes, node.Name)
	}
	for _, o := range objs {
		m, _ := metav1ObjectOf(o)
		m.SetResourceVersion(w.nextVersion())
	}
	// NewSimpleClientset, not NewClientset: the field-managed tracker of
	// the latter computes managed fields on every write, which costs the
	// harness's CPU at a thousand nodes per cluster; nothing here applies.
	w.Fake = fake.NewSimpleClientset(objs...) //nolint:staticcheck // see above
	w.Fake.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		if m, err := metav1ObjectOf(obj); err == nil {
			if m.GetName() == "" && m.GetGenerateName() != "" {
				m.SetName(m.GetGenerateName() + rand.String(5))
			}
			if m.GetUID() == "" {
				m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids.Add(1))))
			}
			if ts := m.GetCreationTimestamp(); ts.IsZero() {
				m.SetCreationTimestamp(metav1.Now())
			}
			m.SetResourceVersion(w.nextVersion())
		}
		return false, nil, nil // the tracker stores it
	})
	w.Fake.PrependReactor("update", "*", w.checkVersion)
	w.Fake.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{
			UserInfo: authnv1.UserInfo{Username: AgentUser}}}, nil
	})
	// The in-memory cluster has no authorizer: the agent, its one user,
	// may do everything (the RoleBindings it creates are stored, not enforced).
	w.Fake.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
		r.Status = authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: "the in-memory cluster authorizes everything"}
		return true, r, nil
	})
	w.Client = &client{Clientset: w.Fake, disc: readyDiscovery(w.Fake)}
	return w, nil
}

// client is the fake clientset with a discovery whose REST client answers
// (the agent checks its cluster's /readyz through it; the fake
// discovery's REST client is nil).
type client struct {
	*fake.Clientset
	disc discovery.DiscoveryInterfaces
}

// Discovery returns the discovery that answers /readyz.
func (c *client) Discovery() discovery.DiscoveryInterfaces { return c.disc }

type readyDisc struct {
	discovery.DiscoveryInterfaces
	rc *restfake.RESTClient
}

// RESTClient answers every request with 200 ok.
func (d readyDisc) RESTClient() rest.Interface { return d.rc }

func okResponse(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": []string{"text/plain"}},
		Body: io.NopCloser(strings.NewReader("ok"))}, nil
}

func readyDiscovery(cs *fake.Clientset) discovery.DiscoveryInterfaces {
	rc := &restfake.RESTClient{NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		Client: restfake.CreateHTTPClient(okResponse)}
	return readyDisc{DiscoveryInterfaces: cs.Discovery(), rc: rc}
}

func metav1ObjectOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", obj)
	}
	return m, nil
}
