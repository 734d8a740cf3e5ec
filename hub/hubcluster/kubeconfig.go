// SPDX-License-Identifier: Apache-2.0

package hubcluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig builds a kubeconfig reaching server with a bearer token.
func kubeconfig(server string, caData []byte, insecure bool, user, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, InsecureSkipTLSVerify: insecure && len(caData) == 0}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: user}
	cfg.CurrentContext = "hub"
	return clientcmd.Write(*cfg)
}

// caData returns the CA bundle of a rest.Config, inline or from its file.
func caData(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read hub CA: %w", err)
		}
		return b, nil
	}
	return nil, nil
}
