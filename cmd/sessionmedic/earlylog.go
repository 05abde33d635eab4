package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"

	"github.com/sessionmedic/sessionmedic/daemon/events"
	"github.com/sessionmedic/sessionmedic/policy"
	"go.yaml.in/yaml/v3"
)

// earlyJSON: the errors `run` says before its policy is loaded (a bad policy, one that
// cannot be read, a bad flag) go out as JSON log lines, as the daemon's own lines would: with
// -log-format json (or auto, off a terminal); else with the policy file's log.format json
// (read leniently from a file that did not load); else, its log.format being auto or unset,
// under journald (JOURNAL_STREAM set, stderr not a terminal), where the shipped units run it
// and `journalctl -o cat | jq` reads the log. flagFormat is the -log-format flag ("": not
// given); file is -config's, "" for none; loadErr is why it did not load.
func earlyJSON(flagFormat, file string, loadErr error, stderr io.Writer) bool {
	if flagFormat != "" {
		_, json := logHandler(stderr, flagFormat, nil).(*slog.JSONHandler)
		return json
	}
	switch policyLogFormat(file, loadErr) {
	case "json":
		return true
	case "text":
		return false
	}
	return underJournald(stderr)
}

// underJournald: stderr is the journal's, as systemd sets JOURNAL_STREAM for a service, and
// not a terminal (a shell started from a service inherits the variable; its user reads text).
func underJournald(stderr io.Writer) bool {
	if os.Getenv("JOURNAL_STREAM") == "" {
		return false
	}
	f, ok := stderr.(*os.File)
	return !ok || !isTerminal(f)
}

// policyLogFormat is the log.format a policy file that failed to load sets ("" for none that
// can be read): only a file whose bytes were read and decoded (the error is the policy's own,
// a file:line:field one) is read again, as the regular file of at most policy.MaxFileBytes it
// then was; a policy that is not YAML at all says nothing.
func policyLogFormat(file string, loadErr error) string {
	var pe *policy.Error
	if file == "" || !errors.As(loadErr, &pe) {
		return ""
	}
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxFileBytes))
	if err != nil {
		return ""
	}
	var doc struct {
		Log struct {
			Format string `yaml:"format"`
		} `yaml:"log"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return ""
	}
	return doc.Log.Format
}

// logPolicyErrors says each error of a policy that did not load as one policy.invalid line,
// its file, line and field as keys: a log reader finds each without parsing the message.
func logPolicyErrors(log *slog.Logger, err error) {
	var all []*policy.Error
	var es policy.Errors
	var pe *policy.Error
	switch {
	case errors.As(err, &es):
		all = es
	case errors.As(err, &pe):
		all = []*policy.Error{pe}
	}
	for _, e := range all {
		log.Error(events.PolicyInvalid, "path", e.File, "line", e.Line, "field", e.Field, "err", e.Msg)
	}
}
