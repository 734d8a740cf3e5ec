// SPDX-License-Identifier: Apache-2.0

// Package webui is the hub's read-only web fleet view: plain HTML, CSS and
// JavaScript embedded in the binary (no build step) that the hub serves
// under /ui/ on its REST listener. The pages read the fleet only through the
// REST face of the API (/v1/...), with the caller's own credentials, and
// every page request is authenticated the way the API authenticates it
// (Handler asks the API who the caller is first). docs/webui.md describes
// the pages and how an operator logs in.
package webui
