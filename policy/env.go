package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Env is what decoding needs from the process environment: where home is, environment
// variables, and whether a path exists. Tests pass a fake one. Nil funcs mean "unset" and
// "does not exist".
type Env struct {
	Home         string
	XDGStateHome string
	XDGDataHome  string
	Getenv       func(string) string
	Exists       func(string) bool
	Root         bool // running as a system service: root, or systemd's $STATE_DIRECTORY is set
	// ReadFile reads a small app config file to find a preset's default location.
	ReadFile func(string) ([]byte, error)
}

// SystemEnv returns the environment of this process.
func SystemEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{
		Home:         home,
		XDGStateHome: os.Getenv("XDG_STATE_HOME"),
		XDGDataHome:  os.Getenv("XDG_DATA_HOME"),
		Getenv:       os.Getenv,
		Exists: func(p string) bool {
			_, err := os.Stat(p)
			return err == nil
		},
		Root:     os.Geteuid() == 0 || os.Getenv("STATE_DIRECTORY") != "",
		ReadFile: readFile, // a FIFO or a device where a config should be is refused, never read
	}
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

func (e Env) exists(p string) bool { return e.Exists != nil && e.Exists(p) }

func (e Env) readFile(p string) ([]byte, error) {
	if e.ReadFile == nil {
		return nil, os.ErrNotExist
	}
	return e.ReadFile(p)
}

// absDir returns p cleaned if it is an absolute path, else "".
func absDir(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

// defaultStateDir is state_dir when the policy does not set it.
func defaultStateDir(env Env) string {
	if sd := env.getenv("STATE_DIRECTORY"); sd != "" {
		// systemd lists one directory per StateDirectory= entry, separated by colons.
		if d := absDir(strings.Split(sd, ":")[0]); d != "" {
			return d
		}
	}
	if d := absDir(env.XDGStateHome); d != "" {
		return filepath.Join(d, "sessionmedic")
	}
	if env.Root {
		return "/var/lib/sessionmedic"
	}
	if d := absDir(env.Home); d != "" {
		return filepath.Join(d, ".local", "state", "sessionmedic")
	}
	return "/var/lib/sessionmedic"
}

// expandPath expands a leading ~ (with home) and $VAR or ${VAR}, then requires an absolute
// path and cleans it. An unset variable is an error, not an empty string.
func expandPath(p string, env Env) (string, error) {
	if p == "" {
		return "", errors.New("must not be empty")
	}
	var missing string
	out := os.Expand(p, func(k string) string {
		v := env.getenv(k)
		if v == "" && missing == "" {
			missing = k
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("%q: $%s is not set", p, missing)
	}
	out, err := expandHome(out, env.Home)
	if err != nil {
		return "", fmt.Errorf("%q: %w", p, err)
	}
	if !filepath.IsAbs(out) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	return filepath.Clean(out), nil
}

// expandHome expands "~" and "~/..." with home.
func expandHome(p, home string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		if strings.HasPrefix(p, "~") {
			return "", errors.New("~user is not supported")
		}
		return p, nil
	}
	if absDir(home) == "" {
		return "", errors.New("~ is used but the home directory is unknown")
	}
	return filepath.Join(home, p[1:]), nil
}
