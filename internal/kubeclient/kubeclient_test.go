// SPDX-License-Identifier: Apache-2.0

package kubeclient

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestSized(t *testing.T) {
	in := &rest.Config{Host: "https://h"}
	out := Sized(in, 200, 400)
	if out.QPS != 200 || out.Burst != 400 || out.ContentType != Protobuf || out.AcceptContentTypes != Protobuf+",application/json" {
		t.Errorf("sized %+v", out)
	}
	if in.QPS != 0 || in.ContentType != "" {
		t.Errorf("the config given was changed: %+v", in)
	}
	own := Sized(&rest.Config{QPS: 7, Burst: 9, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}, 200, 400)
	if own.QPS != 7 || own.Burst != 9 || own.ContentType != "application/json" || own.AcceptContentTypes != "" {
		t.Errorf("a config's own limits and encoding overridden: %+v", own)
	}
	limited := Sized(&rest.Config{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}, 200, 400)
	if limited.QPS != 0 {
		t.Errorf("a config's own rate limiter overridden by QPS %v", limited.QPS)
	}
}
