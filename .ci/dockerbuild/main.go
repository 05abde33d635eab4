//go:build linux

// Command dockerbuild stands in for `docker build` and `docker run` of the repository's
// Dockerfile on a machine with no container engine (.ci/container-check runs it). It is no
// general builder: it knows the two kinds of base image the Dockerfile uses.
//
//	dockerbuild build -f Dockerfile -context DIR -out DIR [-build-arg K=V]...
//	dockerbuild run -image DIR/image.json [-bind HOST:PATH[:ro]]... [-- ARG...]
//
// build runs the Dockerfile's instructions in order. A stage FROM golang:X runs its RUN
// lines with /bin/sh, chrooted into the stage's root, where the host's /usr (with Go in
// /usr/local/go, whose version must be X), /etc, /dev and /proc stand in for the golang
// image, with that image's environment (GOPATH=/go, GOTOOLCHAIN=local) and its cache mounts
// bound to the host's module and build caches. A stage FROM any other image starts empty
// and may not RUN (the Dockerfile's final stage, distroless: no shell). COPY takes the
// build context as .dockerignore leaves it, or another stage's files, with --chown; a
// source that does not exist fails the build, as it fails `docker build`. WORKDIR, ARG
// (with the platform ARGs set for the host), ENV, USER, EXPOSE, ENTRYPOINT and CMD are
// followed; any other instruction is an error until it is taught here. The last stage's
// files become DIR/rootfs and its configuration DIR/image.json, and DIR/image.sh for a shell
// to source (IMAGE_BASE, IMAGE_ROOTFS, IMAGE_USER, IMAGE_WORKDIR, and the arrays IMAGE_ENV,
// IMAGE_ENTRYPOINT, IMAGE_CMD, IMAGE_EXPOSE).
//
// run starts the image's ENTRYPOINT (with the ARGs, else its CMD) chrooted into its rootfs,
// as its USER, with its ENV and no other, with /proc and /dev and each -bind mounted into it;
// SIGINT and SIGTERM are passed on, and it exits as the process does.
//
// Both mount, so both need root and a mount namespace of their own, whose mounts go with
// the process: run them under `unshare --mount --propagation private` (they refuse to run
// in the mount namespace of the process that started them).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dockerbuild build|run ...")
		os.Exit(2)
	}
	var err error
	code := 0
	// Its mounts must stay in a namespace of its own: refuse the one of the process that
	// started it (unshare without --fork execs this program in the new one).
	self, _ := os.Readlink("/proc/self/ns/mnt")
	parent, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if self == "" || parent == "" || self == parent {
		err = errors.New("not in a mount namespace of its own: run under unshare --mount --propagation private")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockerbuild:", err)
		os.Exit(1)
	}
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "run":
		code, err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockerbuild:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// image is what build leaves of the last stage: its files and its configuration.
type image struct {
	Base       string            `json:"base"`
	Rootfs     string            `json:"rootfs"`
	User       string            `json:"user"`
	Env        []string          `json:"env"`
	Workdir    string            `json:"workdir"`
	Entrypoint []string          `json:"entrypoint"`
	Cmd        []string          `json:"cmd"`
	Expose     []string          `json:"expose"`
	Chown      map[string]string `json:"chown"` // image path -> uid:gid, for each COPY --chown
}

type instr struct {
	line int
	op   string // upper case
	args string
}

// parse reads a Dockerfile: comments and parser directives dropped, continuation lines
// joined.
func parse(name string) ([]instr, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []instr
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") || (t == "" && cur.Len() == 0) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		op, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instr{line: start, op: strings.ToUpper(op), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	return out, sc.Err()
}

// flags splits leading --name=value options off args.
func flags(args string) (map[string][]string, string) {
	fl := map[string][]string{}
	for strings.HasPrefix(args, "--") {
		f, rest, _ := strings.Cut(args, " ")
		k, v, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		fl[k] = append(fl[k], v)
		args = strings.TrimSpace(rest)
	}
	return fl, args
}

// execForm parses a JSON array (ENTRYPOINT ["a", "b"]); the shell form is refused: a
// distroless image has no shell to run it.
func execForm(args string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return nil, fmt.Errorf("%s: not the exec form (a JSON array): %v", args, err)
	}
	return v, nil
}

type stage struct {
	name, base string
	golang     bool
	root       string
	workdir    string
	vars       map[string]string // ARG and ENV values, for substitution
	env        []string          // what RUN and the image get
	img        image
}

func (s *stage) expand(v string) string {
	return os.Expand(v, func(k string) string { return s.vars[k] })
}

func (s *stage) setEnv(k, v string) {
	s.vars[k] = v
	for i, e := range s.env {
		if strings.HasPrefix(e, k+"=") {
			s.env[i] = k + "=" + v
			return
		}
	}
	s.env = append(s.env, k+"="+v)
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	dockerfile := fs.String("f", "Dockerfile", "the Dockerfile")
	context := fs.String("context", ".", "the build context")
	out := fs.String("out", "", "where the stages' roots, rootfs and image.json go (created)")
	var buildArgs []string
	fs.Func("build-arg", "K=V, as docker build --build-arg", func(v string) error { buildArgs = append(buildArgs, v); return nil })
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("build: -out is required")
	}
	ins, err := parse(*dockerfile)
	if err != nil {
		return err
	}
	ignore, err := readIgnore(filepath.Join(*context, ".dockerignore"))
	if err != nil {
		return err
	}
	plat := runtime.GOOS + "/" + runtime.GOARCH
	given := map[string]string{
		"BUILDPLATFORM": plat, "BUILDOS": runtime.GOOS, "BUILDARCH": runtime.GOARCH,
		"TARGETPLATFORM": plat, "TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH,
	}
	for _, a := range buildArgs {
		k, v, _ := strings.Cut(a, "=")
		given[k] = v
	}
	global := map[string]string{}
	stages := map[string]*stage{} // by index and by name
	n := 0
	var s *stage
	for _, in := range ins {
		where := fmt.Sprintf("%s:%d: %s", *dockerfile, in.line, in.op)
		if s == nil && in.op != "FROM" && in.op != "ARG" {
			return fmt.Errorf("%s before the first FROM", where)
		}
		switch in.op {
		case "FROM":
			if s != nil {
				if err := s.finish(); err != nil {
					return err
				}
			}
			_, rest := flags(in.args) // --platform: the host's, both sides
			f := strings.Fields(rest)
			s = &stage{base: os.Expand(f[0], func(k string) string { return global[k] }), vars: map[string]string{}}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			s.root = filepath.Join(*out, "stages", strconv.Itoa(n))
			if err := s.begin(); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			stages[strconv.Itoa(n)] = s
			n++
			if s.name != "" {
				stages[s.name] = s
			}
		case "ARG":
			k, def, hasDef := strings.Cut(in.args, "=")
			v, ok := given[k]
			if !ok && hasDef {
				v = def
			}
			if s == nil {
				global[k] = v
			} else {
				s.setEnv(k, v) // visible to RUN, not kept in the image
			}
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("%s: %q: write ENV K=V", where, kv)
				}
				s.setEnv(k, s.expand(strings.Trim(v, `"`)))
				s.img.Env = append(s.img.Env, k+"="+s.vars[k])
			}
		case "WORKDIR":
			s.workdir = path.Join(s.workdir, s.expand(in.args))
			if err := os.MkdirAll(filepath.Join(s.root, s.workdir), 0o755); err != nil {
				return err
			}
		case "COPY":
			if err := s.copy(in.args, *context, ignore, stages); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
		case "RUN":
			if err := s.run(in.args); err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
		case "USER":
			s.img.User = s.expand(in.args)
		case "EXPOSE":
			s.img.Expose = append(s.img.Expose, strings.Fields(s.expand(in.args))...)
		case "ENTRYPOINT", "CMD":
			v, err := execForm(in.args)
			if err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			if in.op == "CMD" {
				s.img.Cmd = v
			} else {
				s.img.Entrypoint = v
			}
		case "LABEL":
		default:
			return fmt.Errorf("%s: not followed here (teach .ci/dockerbuild)", where)
		}
	}
	if s == nil {
		return errors.New("no FROM")
	}
	if err := s.finish(); err != nil {
		return err
	}
	rootfs := filepath.Join(*out, "rootfs")
	if err := os.Rename(s.root, rootfs); err != nil {
		return err
	}
	s.img.Base, s.img.Rootfs, s.img.Workdir = s.base, rootfs, s.workdir
	b, err := json.MarshalIndent(s.img, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "image.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var sh strings.Builder
	for _, kv := range [][2]string{{"BASE", s.img.Base}, {"ROOTFS", rootfs}, {"USER", s.img.User}, {"WORKDIR", s.img.Workdir}} {
		fmt.Fprintf(&sh, "IMAGE_%s=%s\n", kv[0], shQuote(kv[1]))
	}
	for _, kv := range []struct {
		k string
		v []string
	}{{"ENV", s.img.Env}, {"ENTRYPOINT", s.img.Entrypoint}, {"CMD", s.img.Cmd}, {"EXPOSE", s.img.Expose}} {
		var q []string
		for _, v := range kv.v {
			q = append(q, shQuote(v))
		}
		fmt.Fprintf(&sh, "IMAGE_%s=(%s)\n", kv.k, strings.Join(q, " "))
	}
	return os.WriteFile(filepath.Join(*out, "image.sh"), []byte(sh.String()), 0o644)
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// begin lays out the stage's root. A golang:X base is the host's Go X.Y toolchain and
// userland, bound read-only.
func (s *stage) begin() error {
	if err := os.MkdirAll(s.root, 0o755); err != nil {
		return err
	}
	s.workdir = "/"
	tag, ok := strings.CutPrefix(s.base, "golang:")
	if !ok {
		return nil
	}
	s.golang = true
	if host := strings.TrimPrefix(runtime.Version(), "go"); host != tag && !strings.HasPrefix(host, tag+".") {
		return fmt.Errorf("FROM %s: the host's Go is %s, not %s", s.base, runtime.Version(), tag)
	}
	for _, d := range []string{"bin", "lib", "lib64", "sbin"} {
		if t, err := os.Readlink("/" + d); err == nil {
			if err := os.Symlink(t, filepath.Join(s.root, d)); err != nil {
				return err
			}
		} else if err := bind("/"+d, filepath.Join(s.root, d), true); err != nil {
			return err
		}
	}
	for _, d := range []string{"usr", "etc"} {
		if err := bind("/"+d, filepath.Join(s.root, d), true); err != nil {
			return err
		}
	}
	for _, d := range []string{"dev", "proc"} {
		if err := bind("/"+d, filepath.Join(s.root, d), false); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(s.root, "tmp"), 0o777); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(s.root, "tmp"), os.ModeSticky|0o777); err != nil {
		return err
	}
	// The golang image's environment; the Go proxy settings of this machine, if any.
	s.setEnv("PATH", "/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	s.setEnv("GOPATH", "/go")
	s.setEnv("GOTOOLCHAIN", "local")
	s.setEnv("HOME", "/root")
	for _, k := range []string{"GOPROXY", "GONOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOINSECURE",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"} {
		if v, ok := os.LookupEnv(k); ok {
			s.setEnv(k, v)
		}
	}
	return nil
}

// finish unmounts what begin and run bound into the stage's root.
func (s *stage) finish() error {
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return err
	}
	var under []string
	for _, l := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], s.root+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		if err := syscall.Unmount(under[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s: %w", under[i], err)
		}
	}
	return nil
}

// bind mounts src at dst (made if missing), read-only if ro.
func bind(src, dst string, ro bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else {
		if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				err = f.Close()
			}
		}
	}
	if err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	if ro {
		if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", dst, err)
		}
	}
	return nil
}

// run runs a RUN line's shell command in the stage's root. --mount=type=cache targets are
// the host's Go module and build caches where the golang image keeps them, else empty.
func (s *stage) run(args string) error {
	if !s.golang {
		return fmt.Errorf("RUN in a stage FROM %s: it has no shell here (nor, for distroless, anywhere)", s.base)
	}
	fl, cmd := flags(args)
	for k := range fl {
		if k != "mount" {
			return fmt.Errorf("RUN --%s: not followed here", k)
		}
	}
	for _, m := range fl["mount"] {
		opts := map[string]string{}
		for _, o := range strings.Split(m, ",") {
			k, v, _ := strings.Cut(o, "=")
			opts[k] = v
		}
		if opts["type"] != "cache" {
			return fmt.Errorf("RUN --mount=%s: only type=cache is followed here", m)
		}
		host, err := cacheDir(opts["target"])
		if err != nil {
			return err
		}
		if err := bind(host, filepath.Join(s.root, opts["target"]), false); err != nil {
			return err
		}
	}
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Dir = s.workdir
	c.Env = s.env
	c.Stdout, c.Stderr = os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Chroot: s.root}
	fmt.Printf("RUN %s\n", cmd)
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// cacheDir is the host directory for a cache mount's target: the golang image keeps
// modules in /go/pkg/mod and builds in /root/.cache/go-build.
func cacheDir(target string) (string, error) {
	var key string
	switch path.Clean(target) {
	case "/go/pkg/mod":
		key = "GOMODCACHE"
	case "/root/.cache/go-build":
		key = "GOCACHE"
	default:
		return os.MkdirTemp("", "dockerbuild-cache-")
	}
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", key, err)
	}
	d := strings.TrimSpace(string(out))
	return d, os.MkdirAll(d, 0o755)
}

// copy follows COPY [--from=STAGE] [--chown=UID:GID] SRC... DST.
func (s *stage) copy(args, context string, ignore []ignorePattern, stages map[string]*stage) error {
	fl, rest := flags(args)
	for k := range fl {
		if k != "from" && k != "chown" {
			return fmt.Errorf("COPY --%s: not followed here", k)
		}
	}
	f := strings.Fields(s.expand(rest))
	if len(f) < 2 {
		return fmt.Errorf("COPY %s: want SRC... DST", rest)
	}
	srcs, dst := f[:len(f)-1], f[len(f)-1]
	toDir := len(srcs) > 1 || strings.HasSuffix(dst, "/")
	if !path.IsAbs(dst) {
		dst = path.Join(s.workdir, dst)
	}
	uid, gid := 0, 0
	if ch := fl["chown"]; len(ch) > 0 {
		u, g, _ := strings.Cut(ch[0], ":")
		var err1, err2 error
		uid, err1 = strconv.Atoi(u)
		gid, err2 = strconv.Atoi(g)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("COPY --chown=%s: only numeric uid:gid here (the image's /etc/passwd is not)", ch[0])
		}
		if s.img.Chown == nil {
			s.img.Chown = map[string]string{}
		}
		s.img.Chown[dst] = ch[0]
	}
	for _, src := range srcs {
		var from string
		var skip func(rel string) bool
		if st := fl["from"]; len(st) > 0 {
			other, ok := stages[st[0]]
			if !ok || other == s {
				return fmt.Errorf("COPY --from=%s: no earlier stage of that name", st[0])
			}
			from = filepath.Join(other.root, src)
			skip = func(string) bool { return false }
		} else {
			if path.IsAbs(src) || strings.HasPrefix(path.Clean(src), "..") {
				return fmt.Errorf("COPY %s: outside the build context", src)
			}
			from = filepath.Join(context, src)
			base := path.Clean(src)
			skip = func(rel string) bool { return ignored(ignore, path.Join(base, rel)) }
			if base != "." && ignored(ignore, base) {
				return fmt.Errorf("COPY %s: .dockerignore leaves it out of the build context", src)
			}
		}
		fi, err := os.Lstat(from)
		if err != nil {
			return fmt.Errorf("COPY %s: %w", src, err)
		}
		target := filepath.Join(s.root, dst)
		if !fi.IsDir() && toDir {
			target = filepath.Join(target, filepath.Base(from))
		}
		if err := copyTree(from, target, skip, uid, gid); err != nil {
			return fmt.Errorf("COPY %s: %w", src, err)
		}
	}
	return nil
}

// copyTree copies a file, or a directory's contents, to dst, keeping modes, owned by
// uid:gid; skip(rel) leaves out an entry (and what is below it).
func copyTree(src, dst string, skip func(rel string) bool, uid, gid int) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if rel != "." && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		t := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(t, 0o755); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(l, t); err != nil {
				return err
			}
			return os.Lchown(t, uid, gid)
		case d.Type().IsRegular():
			if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
				return err
			}
			if err := copyFile(p, t); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}
		if err := os.Chmod(t, fi.Mode().Perm()|fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
		return os.Lchown(t, uid, gid)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ignorePattern is one line of .dockerignore: a path pattern from the context's root,
// where * and ? stay within a path element and ** spans any number of them; a pattern that
// matches a directory leaves out all below it; ! takes a path back in; the last match wins.
type ignorePattern struct {
	re     *regexp.Regexp
	negate bool
}

func readIgnore(name string) ([]ignorePattern, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ignorePattern
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		p := ignorePattern{}
		if l, p.negate = strings.CutPrefix(l, "!"); p.negate {
			l = strings.TrimSpace(l)
		}
		l = strings.TrimPrefix(path.Clean(l), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(l); i++ {
			switch c := l[i]; {
			case strings.HasPrefix(l[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(l[i:], "**"):
				re.WriteString(".*")
				i++
			case c == '*':
				re.WriteString("[^/]*")
			case c == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		if p.re, err = regexp.Compile(re.String()); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, l, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ignored reports whether .dockerignore leaves rel (a slash path from the context's root)
// out, itself or through a directory above it.
func ignored(pats []ignorePattern, rel string) bool {
	out := false
	for _, p := range pats {
		for q := rel; ; q = path.Dir(q) {
			if p.re.MatchString(q) {
				out = !p.negate
				break
			}
			if !strings.Contains(q, "/") {
				break
			}
		}
	}
	return out
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	imageFile := fs.String("image", "", "the image.json build wrote")
	var binds []string
	fs.Func("bind", "HOST:PATH[:ro], as docker run -v", func(v string) error { binds = append(binds, v); return nil })
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(*imageFile)
	if err != nil {
		return 0, err
	}
	var img image
	if err := json.Unmarshal(b, &img); err != nil {
		return 0, fmt.Errorf("%s: %w", *imageFile, err)
	}
	argv := append(append([]string{}, img.Entrypoint...), fs.Args()...)
	if len(fs.Args()) == 0 {
		argv = append(argv, img.Cmd...)
	}
	if len(argv) == 0 {
		return 0, errors.New("the image has no ENTRYPOINT or CMD")
	}
	u, g, _ := strings.Cut(img.User, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("USER %q: want a numeric uid:gid (the image's /etc/passwd is not here)", img.User)
	}
	for _, d := range []string{"/proc", "/dev"} {
		if err := bind(d, filepath.Join(img.Rootfs, d), false); err != nil {
			return 0, err
		}
	}
	for _, v := range binds {
		f := strings.Split(v, ":")
		if len(f) < 2 || !path.IsAbs(f[1]) {
			return 0, fmt.Errorf("-bind %s: want HOST:PATH[:ro]", v)
		}
		if err := bind(f[0], filepath.Join(img.Rootfs, f[1]), len(f) > 2 && f[2] == "ro"); err != nil {
			return 0, err
		}
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Path, c.Err = argv[0], nil // looked up inside the chroot, not here
	c.Dir = img.Workdir
	if c.Dir == "" {
		c.Dir = "/"
	}
	c.Env = img.Env
	c.Stdin, c.Stdout, c.Stderr = nil, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     img.Rootfs,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := c.Start(); err != nil {
		return 0, fmt.Errorf("start %q in %s: %w", argv, img.Rootfs, err)
	}
	go func() {
		for s := range sig {
			c.Process.Signal(s)
		}
	}()
	err = c.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}
