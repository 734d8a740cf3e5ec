// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Defaults of Config.
const (
	DefaultResource       = "nvidia.com/gpu"
	DefaultHealthInterval = time.Second
	registerTimeout       = 10 * time.Second
	minRetry, maxRetry    = 100 * time.Millisecond, 5 * time.Second
)

// Config is one plugin: which devices it advertises and to which kubelet.
type Config struct {
	// SocketDir is the kubelet's device-plugin directory (kubelet.sock is
	// there; the plugin's own socket goes there too).
	SocketDir string
	// Resource is the extended resource the devices are advertised as.
	Resource string
	// IDs are the device IDs (DeviceIDs).
	IDs []string
	// HealthFile, when set, is read every HealthInterval: the device IDs it
	// lists are unhealthy, every other device healthy (ReadHealthFile).
	HealthFile     string
	HealthInterval time.Duration
	// SocketName is the plugin's socket in SocketDir; default from Resource
	// ("shoal-nvidia.com-gpu.sock").
	SocketName string
}

// Plugin serves the DevicePlugin service on its socket and registers it with
// the kubelet, again whenever the kubelet restarts.
type Plugin struct {
	cfg  Config
	devs *devices
}

// New checks cfg and returns its plugin.
func New(cfg Config) (*Plugin, error) {
	if cfg.SocketDir == "" {
		return nil, errors.New("socket directory not set")
	}
	if !strings.Contains(cfg.Resource, "/") {
		return nil, fmt.Errorf("resource %q: want an extended resource name (domain/name)", cfg.Resource)
	}
	if cfg.SocketName == "" {
		cfg.SocketName = "shoal-" + strings.ReplaceAll(cfg.Resource, "/", "-") + ".sock"
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = DefaultHealthInterval
	}
	return &Plugin{cfg: cfg, devs: newDevices(cfg.IDs)}, nil
}

// Socket is the path of the plugin's own socket.
func (p *Plugin) Socket() string { return filepath.Join(p.cfg.SocketDir, p.cfg.SocketName) }

// kubeletSocket is the path of the kubelet's registration socket.
func (p *Plugin) kubeletSocket() string {
	return filepath.Join(p.cfg.SocketDir, filepath.Base(pluginapi.KubeletSocket))
}

// Run serves and registers the plugin until ctx ends. When kubelet.sock is
// created again (the kubelet restarted and removed every plugin socket), it
// serves on a new socket and registers again; a failed registration is
// retried with backoff. Run returns nil when ctx ends.
func (p *Plugin) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithValues("resource", p.cfg.Resource, "socket", p.Socket())
	if err := os.MkdirAll(p.cfg.SocketDir, 0o750); err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	if err := w.Add(p.cfg.SocketDir); err != nil {
		return fmt.Errorf("watch %s: %w", p.cfg.SocketDir, err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.cfg.HealthFile != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchHealth(ctx, p.cfg.HealthFile, p.cfg.HealthInterval, p.devs)
		}()
	}
	log.Info("Starting device plugin", "devices", len(p.cfg.IDs))
	for {
		restart, err := p.serveOnce(ctx, w, log)
		if err != nil || !restart {
			return err
		}
		log.Info("Kubelet restarted; serving and registering again")
	}
}

// serveOnce serves on a fresh socket and registers, until kubelet.sock is
// created again (restart true), ctx ends or the server fails.
func (p *Plugin) serveOnce(ctx context.Context, w *fsnotify.Watcher, log klog.Logger) (restart bool, err error) {
	if err := os.Remove(p.Socket()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	ln, err := net.Listen("unix", p.Socket())
	if err != nil {
		return false, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, &service{devs: p.devs})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Stop()
		if serr := <-served; serr != nil && err == nil {
			err = serr
		}
	}()
	retry, backoff := time.NewTimer(0), minRetry
	defer retry.Stop()
	var lastErr string // a registration error is logged when it first appears
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case err := <-served:
			served <- err // for the deferred Stop
			return false, fmt.Errorf("serve %s: %w", p.Socket(), err)
		case ev, ok := <-w.Events:
			if !ok {
				return false, errors.New("socket directory watch closed")
			}
			if ev.Name == p.kubeletSocket() && ev.Has(fsnotify.Create) {
				return true, nil
			}
		case err := <-w.Errors:
			log.Error(err, "Watching the socket directory")
		case <-retry.C:
			if err := p.register(ctx); err != nil {
				if err.Error() != lastErr {
					log.Info("Registration with the kubelet failed; retrying with backoff", "err", err)
					lastErr = err.Error()
				}
				retry.Reset(backoff)
				backoff = min(2*backoff, maxRetry)
				continue
			}
			log.Info("Registered with the kubelet", "kubeletSocket", p.kubeletSocket())
		}
	}
}

// register sends the RegisterRequest to the kubelet.
func (p *Plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+p.kubeletSocket(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.cfg.SocketName,
		ResourceName: p.cfg.Resource,
		Options:      options,
	})
	return err
}
