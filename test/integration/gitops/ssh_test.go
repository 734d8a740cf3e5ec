// SPDX-License-Identifier: Apache-2.0

package gitops_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	fluxssh "github.com/fluxcd/pkg/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSSHCredentialsFromSecret fetches over SSH with an identity and
// known_hosts read from a Secret in the agent's namespace.
func TestSSHCredentialsFromSecret(t *testing.T) {
	integration(t)
	srv := gittestserver.NewGitServer(gitSrv.Root()).KeyDir(t.TempDir())
	if err := srv.ListenSSH(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.StartSSH() }()
	t.Cleanup(func() { _ = srv.StopSSH() })
	u, err := url.Parse(srv.SSHAddress())
	if err != nil {
		t.Fatal(err)
	}
	knownHosts, err := fluxssh.ScanHostKey(u.Host, 10*time.Second, nil, false)
	if err != nil {
		t.Fatalf("scan host key: %v", err)
	}
	kp, err := fluxssh.GenerateKeyPair(fluxssh.ECDSA_P256)
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, false)
	create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "git-ssh"},
		Data:       map[string][]byte{"identity": kp.PrivateKey, "known_hosts": knownHosts},
	})
	repo := newRepo(t, map[string]string{"cm.yaml": cmYAML("default", a.ns+"-ssh", map[string]string{"via": "ssh"})})
	src := source(repo, "")
	src.URL = srv.SSHAddress() + "/" + repo.name
	src.SecretRef = "git-ssh"
	st := a.syncOK(t, src)
	if st.AppliedCommit != repo.head(t) || configMap(t, "default", a.ns+"-ssh") == nil {
		t.Fatalf("ssh sync applied %s", st.AppliedCommit)
	}
}
