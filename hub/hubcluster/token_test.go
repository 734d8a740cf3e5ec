package hubcluster_test

import authenticationv1 "k8s.io/api/authentication/v1"

func tokenRequest() *authenticationv1.TokenRequest {
	ttl := int64(3600)
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}
}
