// Package console tests the dev console (package dev) in headless
// Chromium, driven with chromedp. It is a module of its own so that users
// of the SDK do not inherit chromedp. The tests skip when no Chromium is
// installed (CHROMIUM names the binary; default /usr/bin/chromium).
package console
