package gang_test

import "k8s.io/apimachinery/pkg/runtime"

type runtimeObject = runtime.Object
