// Package deploy holds no code. Its tests read the deployment files (deploy/kubernetes,
// systemd/) and the prose that quotes them, and fail where a comment or a sentence says
// something other than what the files set, or where the files and the code part ways: the
// sidecar's memory figures, its -watch-config, the systemd drop-in's ReadWritePaths= for
// every preset's default location.
//
// The Prometheus rules in deploy/prometheus are tested by promtool (alerts_test.yaml), the
// release and the container by .ci/release-check and .ci/container-check.
package deploy
