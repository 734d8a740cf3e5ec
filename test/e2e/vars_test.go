// SPDX-License-Identifier: Apache-2.0

package e2e

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

var metaGet = metav1.GetOptions{}

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
