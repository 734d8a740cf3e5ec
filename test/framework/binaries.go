// SPDX-License-Identifier: Apache-2.0

// Package framework starts the real parts Shoal's integration and end-to-end
// tests run against: etcd, kube-apiservers, kube-schedulers and KWOK GPU
// nodes built by `make k8s-bin` into the binary cache. Single API servers come
// from StartControlPlane (envtest); whole local fleets from RunWithFleet or
// StartFleet (package internal/devfleet, the runtime of `shoal dev`).
package framework

import "github.com/shoal-dev/shoal/internal/devfleet"

// CacheDir is where `make k8s-bin` keeps its outputs: $SHOAL_CACHE, or
// shoal/ under the user's cache directory.
func CacheDir() string { return devfleet.CacheDir() }

// BinDir holds kube-apiserver, kube-scheduler, kube-controller-manager, etcd and kwok.
func BinDir() string { return devfleet.BinDir() }

// KwokStagesDir holds the KWOK stage configs copied from the kwok module.
func KwokStagesDir() string { return devfleet.KwokStagesDir() }

// RequiredBinaries are the executables the local fleet needs.
var RequiredBinaries = devfleet.RequiredBinaries

// CheckBinaries returns an error naming every missing binary and the command
// that builds them.
func CheckBinaries() error { return devfleet.CheckBinaries(BinDir(), "") }
