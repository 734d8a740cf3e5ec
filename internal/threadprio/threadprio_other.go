// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package threadprio

import "errors"

var errUnsupported = errors.New("thread nice values are set on Linux only")

// Set fails: not on this platform.
func Set(int) (int, error) { return 0, errUnsupported }

// Get fails: not on this platform.
func Get() (int, error) { return 0, errUnsupported }

// Restore does nothing: Set never changed anything here.
func Restore(int) error { return nil }
