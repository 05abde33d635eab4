#!/usr/bin/env bash
# Build a release of sessionmedic:
#
#   deploy/release/build.sh VERSION [OUTDIR]        # OUTDIR defaults to ./dist in the repository
#
# VERSION is the release's version, e.g. 1.2.0 or v1.2.0-rc.1. For each architecture in
# $ARCHES (default "amd64 arm64") OUTDIR gets:
#   sessionmedic-VERSION-linux-ARCH.tar.gz  a static binary (CGO_ENABLED=0, -trimpath,
#       -ldflags "-s -w -X main.version=VERSION"), LICENSE, README.md, config.example.yaml and
#       the systemd units as in systemd/ (they run /usr/local/bin/sessionmedic: systemd/README.md)
#   sessionmedic_DEBVERSION_ARCH.deb  the Debian package: /usr/bin/sessionmedic, the hardened
#       system unit (/usr/lib/systemd/system) and the user unit (/usr/lib/systemd/user), both
#       running /usr/bin/sessionmedic; the default policy, commented, as the conffile
#       /etc/sessionmedic/policy.yaml; docs in /usr/share/doc/sessionmedic, with the license as
#       its copyright file (deploy/release/debian/copyright: Debian's machine-readable format,
#       Apache-2.0, whose text Debian keeps in /usr/share/common-licenses). The service's state
#       directory /var/lib/sessionmedic-service is the unit's StateDirectory= (root's own
#       commands keep /var/lib/sessionmedic). Installing it reloads a running
#       systemd but neither enables nor starts the service (its user and session directories
#       must be set in a drop-in first). DEBVERSION is VERSION without a leading "v" and with
#       "-" as "~" (1.2.0-rc.1 sorts before 1.2.0).
# and SHA256SUMS over all of them (check with: cd OUTDIR && sha256sum -c SHA256SUMS).
#
# The commit (with "-dirty" for a modified tree) goes into the binaries with
# -X main.revision=, and the commit's time into every file's mtime, so that two builds of one
# commit give the same bytes. Needs go, git, tar, gzip, sha256sum and dpkg-deb; runs as any
# user (dpkg-deb --root-owner-group makes the package's files root's).
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
umask 022

die() { echo "build.sh: $*" >&2; exit 2; }
if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: deploy/release/build.sh VERSION [OUTDIR]"; fi
version=$1
[[ "$version" =~ ^v?[0-9][0-9A-Za-z.+~-]*$ ]] || die "VERSION $version: want a version such as 1.2.0 or v1.2.0-rc.1"
deb_version=${version#v}
deb_version=${deb_version//-/\~}
arches=${ARCHES:-amd64 arm64}
for arch in $arches; do
  case "$arch" in amd64 | arm64) ;; *) die "ARCHES: $arch is not amd64 or arm64" ;; esac
done
maintainer=${MAINTAINER:-sessionmedic maintainers <sessionmedic@users.noreply.github.com>}
for tool in go tar gzip sha256sum dpkg-deb; do
  command -v "$tool" >/dev/null || die "$tool not found"
done

repo=$(cd "$(dirname "$0")/../.." && pwd)
for f in LICENSE deploy/release/debian/copyright; do
  [ -f "$repo/$f" ] || die "$f not found: a release carries its license"
done
outdir=${2:-$repo/dist}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

revision=""
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-}
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  revision=$(git -C "$repo" rev-parse HEAD)
  [ -z "$(git -C "$repo" status --porcelain)" ] || revision+="-dirty"
  SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
echo "== sessionmedic $version (deb $deb_version), revision ${revision:-unknown}, $(go version | cut -d' ' -f3), into $outdir"

# stamp DIR: every entry's mtime set to the commit's time.
stamp() { find "$1" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +; }
# targz DIR NAME OUT: NAME (a directory in DIR) as a reproducible tar.gz.
targz() {
  tar -C "$1" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$2" | gzip -9n >"$3"
}

# The packaged policy: the embedded default with a header for the system service.
policy="$work/policy.yaml"
{
  cat <<'EOF'
# /etc/sessionmedic/policy.yaml: the policy of the sessionmedic system service, which runs
#   /usr/bin/sessionmedic run -config /etc/sessionmedic/policy.yaml
# A conffile: upgrades keep your edits (dpkg asks when both changed).
#
# As installed it is the embedded default policy: one rule per app, without paths, so each
# app's default location under the service user's home applies (~/.openclaw, ~/.claude,
# ~/.codex, ...); the daemon keeps the locations that exist and logs the others. To watch
# other directories, give a rule `paths:`. Every key, with its default, is documented in
# /usr/share/doc/sessionmedic/config.example.yaml. Leave state_dir unset: the unit's
# StateDirectory= makes /var/lib/sessionmedic-service (quarantine/, last-good/, journal/).
#
# The service is neither enabled nor started by the package. First set the apps' user and
# open up their session directories (the unit makes everything else read-only) in a drop-in,
#   sudo systemctl edit sessionmedic
# with User=, Group= and one ReadWritePaths= per watched directory, as in
# /usr/share/doc/sessionmedic/session-dirs.conf.example; then
#   sessionmedic policy -config /etc/sessionmedic/policy.yaml   # check, print the effective policy
#   sudo systemctl enable --now sessionmedic
# After editing this file: sudo systemctl reload sessionmedic
#
EOF
  # policy/default.yaml from its first line that is not a comment.
  awk 'body || !/^#/ { body = 1; print }' "$repo/policy/default.yaml"
} >"$policy"

# packaged UNIT OUT: a unit of systemd/ as packaged: the binary is /usr/bin/sessionmedic.
packaged() {
  {
    echo "# Installed by the sessionmedic package; override settings in a drop-in (systemctl edit),"
    echo "# do not edit this file. Documentation: /usr/share/doc/sessionmedic/."
    sed 's|/usr/local/bin/sessionmedic|/usr/bin/sessionmedic|g' "$1"
  } >"$2"
  if grep -n '/usr/local/bin' "$2"; then die "$1: a path under /usr/local/bin is left in the packaged unit"; fi
}

host_arch=$(go env GOHOSTARCH)
artifacts=()
for arch in $arches; do
  echo "== linux/$arch"
  bin="$work/$arch/sessionmedic"
  # -buildvcs=false: the revision is passed with -X (the go command stamps none in a git
  # worktree, or a wrong one in a worktree nested in another checkout).
  (cd "$repo" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X main.version=$version -X main.revision=$revision" -o "$bin" ./cmd/sessionmedic)
  go version -m "$bin" | grep -q $'\tbuild\tCGO_ENABLED=0$' || die "$bin: not built with CGO_ENABLED=0"
  if [ "$arch" = "$host_arch" ]; then
    got=$("$bin" version)
    [[ "$got" == "sessionmedic $version ("* ]] || die "$bin version says: $got"
    echo "   $got"
    HOME="$work/empty-home" "$bin" policy -config "$policy" >/dev/null 2>&1 ||
      { HOME="$work/empty-home" "$bin" policy -config "$policy" || true; die "the packaged policy does not validate"; }
    echo "   the packaged policy validates"
  fi

  # --- archive
  name="sessionmedic-$version-linux-$arch"
  a="$work/$arch/$name"
  mkdir -p "$a/systemd/sessionmedic.service.d" "$a/systemd/user"
  install -m 0755 "$bin" "$a/sessionmedic"
  install -m 0644 "$repo/LICENSE" "$repo/README.md" "$repo/config.example.yaml" "$a/"
  for f in README.md sessionmedic.service sessionmedic.service.d/session-dirs.conf.example user/sessionmedic.service; do
    install -m 0644 "$repo/systemd/$f" "$a/systemd/$f"
  done
  stamp "$a"
  targz "$work/$arch" "$name" "$outdir/$name.tar.gz"
  artifacts+=("$name.tar.gz")

  # --- Debian package
  root="$work/$arch/deb"
  install -D -m 0755 "$bin" "$root/usr/bin/sessionmedic"
  install -d -m 0755 "$root/usr/lib/systemd/system" "$root/usr/lib/systemd/user" "$root/etc/sessionmedic" \
    "$root/usr/share/doc/sessionmedic" "$root/DEBIAN"
  packaged "$repo/systemd/sessionmedic.service" "$root/usr/lib/systemd/system/sessionmedic.service"
  packaged "$repo/systemd/user/sessionmedic.service" "$root/usr/lib/systemd/user/sessionmedic.service"
  install -m 0644 "$policy" "$root/etc/sessionmedic/policy.yaml"
  install -m 0644 "$repo/README.md" "$repo/config.example.yaml" \
    "$repo/systemd/sessionmedic.service.d/session-dirs.conf.example" "$root/usr/share/doc/sessionmedic/"
  install -m 0644 "$repo/systemd/README.md" "$root/usr/share/doc/sessionmedic/README.systemd.md"
  install -m 0644 "$repo/deploy/release/debian/copyright" "$root/usr/share/doc/sessionmedic/copyright"
  chmod 0644 "$root"/usr/lib/systemd/*/sessionmedic.service
  install -m 0644 "$repo/deploy/release/debian/conffiles" "$root/DEBIAN/conffiles"
  install -m 0755 "$repo/deploy/release/debian/postinst" "$repo/deploy/release/debian/prerm" \
    "$repo/deploy/release/debian/postrm" "$root/DEBIAN/"
  installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  cat >"$root/DEBIAN/control" <<EOF
Package: sessionmedic
Version: $deb_version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kb
Section: admin
Priority: optional
Homepage: https://github.com/sessionmedic/sessionmedic
Description: watch AI-agent session files and heal damaged ones
 sessionmedic validates the session files of AI-agent apps (OpenClaw, nanobot,
 PraisonAI, CoPaw/QwenPaw, OpenViking) and coding CLIs (Claude Code, Codex CLI,
 Gemini CLI, pi, Copilot CLI, Qwen Code) as strictly as the apps' own readers,
 keeps damaged bytes in quarantine and restores each file as a YAML policy says,
 holding the app's lock.
 .
 The package installs a hardened systemd unit that is neither enabled nor
 started: set the apps' user and session directories in a drop-in first
 (/usr/share/doc/sessionmedic/session-dirs.conf.example).
EOF
  stamp "$root"
  deb="sessionmedic_${deb_version}_$arch.deb"
  dpkg-deb --build --root-owner-group -Zxz "$root" "$outdir/$deb" >/dev/null
  artifacts+=("$deb")
done

(cd "$outdir" && sha256sum "${artifacts[@]}" >SHA256SUMS)
echo "== $outdir"
(cd "$outdir" && ls -l "${artifacts[@]}" SHA256SUMS && cat SHA256SUMS)
