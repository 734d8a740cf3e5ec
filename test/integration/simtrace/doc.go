// SPDX-License-Identifier: Apache-2.0

// Package simtrace replays the simulator's own small trace
// (federation/sim/testdata/simtrace-*) both in federation/sim and against a
// local KWOK fleet with the real shoal-hub and shoal-agent binaries, and
// checks that the two agree on which gangs ran where and in which order they
// started (TestTraceReplayAgrees). Everything skips under -short.
package simtrace
