// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a standalone admin kubeconfig (certificates
// embedded) for the clusters, with one context per cluster named after it;
// the first is the current context.
func writeKubeconfig(path, pki string, clusters ...*Cluster) error {
	read := func(f string) ([]byte, error) { return os.ReadFile(filepath.Join(pki, f)) }
	ca, err := read(caCertFile)
	if err != nil {
		return err
	}
	cert, err := read(adminCertFile)
	if err != nil {
		return err
	}
	key, err := read(adminKeyFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos[adminUser] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	for i, c := range clusters {
		cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: ca}
		cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: adminUser}
		if i == 0 {
			cfg.CurrentContext = c.Name
		}
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig returns an administrator's client configuration for the cluster,
// with client-side rate limits raised for bulk work.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	return cfg, nil
}

// Clientset returns a typed client for the cluster.
func (c *Cluster) Clientset() (kubernetes.Interface, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
