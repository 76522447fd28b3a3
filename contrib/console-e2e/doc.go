// Package consolee2e tests the web console of fsmctl serve in a real
// browser: headless Chromium (Debian's /usr/bin/chromium, or the one the
// CHROMIUM environment variable names), driven with chromedp, against the
// fsmctl binary built from this repository and a real PostgreSQL (the
// runtime/pgtest helper: FSMGEN_TEST_DATABASE_URL, or a throwaway cluster).
//
// It is a module of its own so that the main module does not depend on
// chromedp; make test runs it. Set FSMGEN_E2E_SCREENSHOTS to a directory
// to keep the screenshots it takes (by default they go to the test's
// temporary directory).
package consolee2e
