//go:build !browser

package server

import "testing"

// TestMonitorInBrowser drives the monitor page in headless Chromium
// (monitor_browser_test.go). Its browser driver, chromedp, is a large
// compile that the fast tier leaves out: build with -tags browser, as
// .ci/run does.
func TestMonitorInBrowser(t *testing.T) {
	t.Skip("the monitor page in Chromium: built without -tags browser (chromedp); go test -tags browser ./server/ runs it, as .ci/run does")
}
