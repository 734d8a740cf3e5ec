// SPDX-License-Identifier: Apache-2.0

package hub

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// client is one identity's connection to the hub.
type client struct {
	jobs   shoalv1.JobsClient
	queues shoalv1.QueuesClient
	users  shoalv1.UsersClient
	config string
}

// clientFor dials the hub with the current context of the config file at path.
func (h *hubProc) clientFor(t *testing.T, path string) *client {
	t.Helper()
	cfg, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := c.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &client{jobs: shoalv1.NewJobsClient(conn), queues: shoalv1.NewQueuesClient(conn),
		users: shoalv1.NewUsersClient(conn), config: path}
}

// shoalAs runs the CLI with the config file at path.
func shoalAs(t *testing.T, path string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "shoal"), append([]string{"--config", path}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("shoal %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

func jobObject(t *testing.T, j *v1alpha1.Job) *shoalv1.Object {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}
}

func decodeJob(t *testing.T, o *shoalv1.Object) *v1alpha1.Job {
	t.Helper()
	j, err := v1alpha1.DecodeJob(o.Json)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestUsersAndRights runs the rights of users against a real hub: a
// submitter of a/b cannot submit to a/c, cancel or read another user's
// job; a viewer changes nothing; a queue-admin manages its subtree only; jobs record their owner whatever the
// client sent; a revoked user (the bootstrap admin too) is refused at the
// next call on a connection it already has, and reissue-admin gets the
// admin back in; every mutating call is in the audit log.
func TestUsersAndRights(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	h := startHub(t, "--audit-log", auditPath)
	ctx := testCtx(t)
	dir := t.TempDir()
	for _, q := range []string{"a/b", "a/c"} {
		if out, err := h.shoal(t, "queue", "create", q); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	create := func(name string, args ...string) string {
		path := filepath.Join(dir, name+".yaml")
		out, err := h.shoal(t, append([]string{"user", "create", name, "--out", path}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return path
	}
	alice := h.clientFor(t, create("alice", "--role", "submitter", "--queue", "a/b"))
	bob := h.clientFor(t, create("bob", "--role", "submitter", "--queue", "a/b"))
	vera := h.clientFor(t, create("vera", "--role", "viewer", "--queue", "a"))
	quinn := h.clientFor(t, create("quinn", "--role", "queue-admin", "--queue", "a/b"))
	admin := h.clientFor(t, h.configPath)

	// Owners come from the hub: alice claims to be mallory.
	j := testjob.New("alice-job").Queue("a/b").Obj()
	j.Status.Owner = "mallory"
	o, err := alice.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, j)})
	if err != nil {
		t.Fatalf("alice submits to a/b: %v", err)
	}
	if got := decodeJob(t, o).Status.Owner; got != "alice" {
		t.Fatalf("owner = %q, want alice", got)
	}
	_, err = alice.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("alice-c").Queue("a/c").Obj())})
	wantCode(t, err, codes.PermissionDenied, "alice submits to a/c")
	if _, err := bob.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("bob-job").Queue("a/b").Obj())}); err != nil {
		t.Fatalf("bob submits to a/b: %v", err)
	}
	_, err = bob.jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "alice-job"})
	wantCode(t, err, codes.PermissionDenied, "bob cancels alice's job")
	_, err = bob.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "alice-job"})
	wantCode(t, err, codes.PermissionDenied, "bob reads alice's job (its template)")
	// Bob resubmitting alice's job name is refused, not answered with her job.
	_, err = bob.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("alice-job").Queue("a/b").Obj())})
	wantCode(t, err, codes.PermissionDenied, "bob resubmits alice's job")
	list, err := bob.jobs.List(ctx, &shoalv1.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || decodeJob(t, list.Items[0]).Name != "bob-job" {
		t.Fatalf("bob lists %d jobs, want only bob-job", len(list.Items))
	}

	// The viewer reads everything of a, changes nothing.
	if got, err := vera.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "alice-job"}); err != nil || decodeJob(t, got).Spec.Template.Spec.Containers[0].Image == "" {
		t.Fatalf("vera reads alice's job: %v", err)
	}
	if list, err := vera.jobs.List(ctx, &shoalv1.ListJobsRequest{}); err != nil || len(list.Items) != 2 {
		t.Fatalf("vera lists: %v (%d items, want 2)", err, len(list.GetItems()))
	}
	_, err = vera.jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "alice-job"})
	wantCode(t, err, codes.PermissionDenied, "vera cancels")
	_, err = vera.jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jobObject(t, testjob.New("vera-job").Queue("a/b").Obj())})
	wantCode(t, err, codes.PermissionDenied, "vera submits")
	_, err = vera.queues.Delete(ctx, &shoalv1.DeleteQueueRequest{Name: "a/c"})
	wantCode(t, err, codes.PermissionDenied, "vera deletes a queue")
	_, err = vera.users.CreateUser(ctx, &shoalv1.CreateUserRequest{Name: "eve", Bindings: []*shoalv1.RoleBinding{{Role: "admin"}}})
	wantCode(t, err, codes.PermissionDenied, "vera creates an admin")

	// The queue-admin manages queues and jobs of its subtree only.
	queue := func(name string) *shoalv1.Object {
		b, _ := json.Marshal(map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "Queue", "metadata": map[string]string{"name": name}})
		return &shoalv1.Object{Json: b}
	}
	if _, err := quinn.queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: queue("a/b/x")}); err != nil {
		t.Fatalf("quinn creates a/b/x: %v", err)
	}
	_, err = quinn.queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: queue("a/c/x")})
	wantCode(t, err, codes.PermissionDenied, "quinn creates a/c/x")
	if _, err := quinn.jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "bob-job"}); err != nil {
		t.Fatalf("quinn cancels bob's job: %v", err)
	}
	if list, err := quinn.queues.List(ctx, &shoalv1.ListQueuesRequest{}); err != nil || len(list.Items) != 2 {
		t.Fatalf("quinn lists queues: %v (%d items, want a/b and a/b/x)", err, len(list.GetItems()))
	}

	// can-i evaluates the same table.
	if out, code := shoalAs(t, alice.config, "auth", "can-i", "create", "jobs", "--queue", "a/b"); code != 0 || !strings.HasPrefix(out, "yes") {
		t.Errorf("alice can-i create jobs in a/b: exit %d, %q", code, out)
	}
	if out, code := shoalAs(t, alice.config, "auth", "can-i", "create", "jobs", "--queue", "a/c"); code != 1 || !strings.HasPrefix(out, "no") {
		t.Errorf("alice can-i create jobs in a/c: exit %d, %q", code, out)
	}
	if out, code := shoalAs(t, vera.config, "auth", "can-i", "cancel", "jobs", "--queue", "a/b"); code != 1 || !strings.HasPrefix(out, "no") {
		t.Errorf("vera can-i cancel jobs: exit %d, %q", code, out)
	}

	// Revocation applies to the next call on an open connection.
	if _, err := bob.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "bob-job"}); err != nil {
		t.Fatalf("bob reads his job: %v", err)
	}
	if out, err := h.shoal(t, "user", "revoke", "bob"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, err = bob.jobs.Get(ctx, &shoalv1.GetJobRequest{Name: "bob-job"})
	wantCode(t, err, codes.PermissionDenied, "revoked bob reads his job")
	out, err := h.shoal(t, "user", "list")
	if err != nil || !strings.Contains(out, "Revoked") || !strings.Contains(out, "submitter@a/b") {
		t.Fatalf("user list: %v\n%s", err, out)
	}

	// The bootstrap admin too; reissue-admin is the way back in.
	if out, err := h.shoal(t, "user", "revoke", "admin"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, err = admin.queues.List(ctx, &shoalv1.ListQueuesRequest{})
	wantCode(t, err, codes.PermissionDenied, "revoked bootstrap admin lists queues")
	reissue := exec.Command(filepath.Join(binDir, "shoal-hub"), "reissue-admin", "--data-dir", h.dataDir,
		"--admin-config", h.configPath, "--advertise-address", h.addr)
	if out, err := reissue.CombinedOutput(); err != nil {
		t.Fatalf("reissue-admin: %v\n%s", err, out)
	}
	admin = h.clientFor(t, h.configPath)
	if _, err := admin.queues.List(ctx, &shoalv1.ListQueuesRequest{}); err != nil {
		t.Fatalf("reissued admin lists queues: %v", err)
	}
	if _, err := admin.jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "alice-job"}); err != nil {
		t.Fatalf("admin cancels alice's job: %v", err)
	}

	// Every mutating call, allowed or refused, is one line of the audit log.
	want := []audit.Entry{
		{User: "admin", Method: "Queues/Create", Object: "a/b", Queue: "a/b", Code: "OK"},
		{User: "admin", Method: "Queues/Create", Object: "a/c", Queue: "a/c", Code: "OK"},
		{User: "admin", Method: "Users/CreateUser", Object: "alice", Code: "OK"},
		{User: "admin", Method: "Users/CreateUser", Object: "bob", Code: "OK"},
		{User: "admin", Method: "Users/CreateUser", Object: "vera", Code: "OK"},
		{User: "admin", Method: "Users/CreateUser", Object: "quinn", Code: "OK"},
		{User: "alice", Method: "Jobs/Submit", Object: "alice-job", Queue: "a/b", Code: "OK"},
		{User: "alice", Method: "Jobs/Submit", Object: "alice-c", Queue: "a/c", Code: "PermissionDenied"},
		{User: "bob", Method: "Jobs/Submit", Object: "bob-job", Queue: "a/b", Code: "OK"},
		{User: "bob", Method: "Jobs/Cancel", Object: "alice-job", Queue: "a/b", Code: "PermissionDenied"},
		{User: "bob", Method: "Jobs/Submit", Object: "alice-job", Queue: "a/b", Code: "PermissionDenied"},
		{User: "vera", Method: "Jobs/Cancel", Object: "alice-job", Queue: "a/b", Code: "PermissionDenied"},
		{User: "vera", Method: "Jobs/Submit", Object: "vera-job", Queue: "a/b", Code: "PermissionDenied"},
		{User: "vera", Method: "Queues/Delete", Object: "a/c", Queue: "a/c", Code: "PermissionDenied"},
		{User: "vera", Method: "Users/CreateUser", Object: "eve", Code: "PermissionDenied"},
		{User: "quinn", Method: "Queues/Create", Object: "a/b/x", Queue: "a/b/x", Code: "OK"},
		{User: "quinn", Method: "Queues/Create", Object: "a/c/x", Queue: "a/c/x", Code: "PermissionDenied"},
		{User: "quinn", Method: "Jobs/Cancel", Object: "bob-job", Queue: "a/b", Code: "OK"},
		{User: "admin", Method: "Users/RevokeUser", Object: "bob", Code: "OK"},
		{User: "admin", Method: "Users/RevokeUser", Object: "admin", Code: "OK"},
		{User: "admin", Method: "Jobs/Cancel", Object: "alice-job", Queue: "a/b", Code: "OK"},
	}
	for i := range want {
		want[i].Auth = "certificate" // every caller here presented a client certificate
	}
	got := readAudit(t, auditPath)
	if len(got) != len(want) {
		t.Errorf("audit log has %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("audit line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// readAudit reads the audit log's entries, checking that each has a time
// and an error message exactly when its code is not OK, and returns them
// without time and message.
func readAudit(t *testing.T, auditPath string) []audit.Entry {
	t.Helper()
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var got []audit.Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e audit.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if e.Time.IsZero() || (e.Code != "OK") != (e.Error != "") {
			t.Errorf("audit line %q: no time, or an error message that does not match the code", sc.Text())
		}
		e.Time, e.Error = time.Time{}, ""
		got = append(got, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
