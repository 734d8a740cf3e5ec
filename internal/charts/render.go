// SPDX-License-Identifier: Apache-2.0

package charts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Release is what one chart is rendered for: helm install NAME --namespace
// NAMESPACE with Values (merged over the chart's values.yaml).
type Release struct {
	Name, Namespace string
	Values          map[string]any
}

// Object is one rendered object and the template that made it.
type Object struct {
	// Template is the template's file name (statefulset.yaml).
	Template string
	*unstructured.Unstructured
}

// Load reads the chart in dir.
func Load(dir string) (*chart.Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", dir, err)
	}
	return c, nil
}

// RenderFiles renders the chart in dir for rel as helm install would (the
// values checked against values.schema.json) and returns each manifest
// template's output by file name (statefulset.yaml), comments kept;
// partials (_helpers.tpl) and templates that render nothing are left out.
func RenderFiles(dir string, rel Release) (map[string]string, error) {
	c, err := Load(dir)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(c, rel.Values,
		chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
	}
	files, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", c.Name(), err)
	}
	out := map[string]string{}
	for name, text := range files {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || !strings.HasSuffix(base, ".yaml") {
			continue
		}
		objs, err := decode(text)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %s: %w", c.Name(), name, err)
		}
		if len(objs) > 0 {
			out[base] = text
		}
	}
	return out, nil
}

// Render renders the chart in dir for rel (RenderFiles) and returns its
// objects in template-name order, each template's objects in file order.
func Render(dir string, rel Release) ([]Object, error) {
	files, err := RenderFiles(dir, rel)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []Object
	for _, name := range names {
		objs, err := decode(files[name])
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, Object{Template: name, Unstructured: o})
		}
	}
	return out, nil
}

// decode splits a rendered template into its objects (empty documents skipped).
func decode(s string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(s)), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}
