// Package framework starts the real parts Shoal's integration and end-to-end
// tests run against: etcd, kube-apiservers, kube-schedulers and KWOK GPU
// nodes built by `make k8s-bin` into the binary cache. Single API servers come
// from StartControlPlane (envtest); whole local fleets from RunWithFleet or
// StartFleet (package test/fleet, the same code as `shoal dev`).
package framework

import "github.com/shoal-dev/shoal/test/fleet"

// CacheDir is where `make k8s-bin` keeps its outputs: $SHOAL_CACHE, or
// shoal/ under the user's cache directory.
func CacheDir() string { return fleet.CacheDir() }

// BinDir holds kube-apiserver, kube-scheduler, kube-controller-manager, etcd and kwok.
func BinDir() string { return fleet.BinDir() }

// KwokStagesDir holds the KWOK stage configs copied from the kwok module.
func KwokStagesDir() string { return fleet.KwokStagesDir() }

// RequiredBinaries are the executables the local fleet needs.
var RequiredBinaries = fleet.RequiredBinaries

// CheckBinaries returns an error naming every missing binary and the command
// that builds them.
func CheckBinaries() error { return fleet.CheckBinaries(BinDir(), "") }
