#!/usr/bin/env bash
# Makes (or reuses) the OpenSSH the device tests run (xtask/tests/cli/device_ssh_cli/), without
# root, in target/test-tools/openssh/, and prints that folder. Where apt-get exists:
#   - `apt-get download` of openssh-server, openssh-client and openssh-sftp-server, and of
#     every library package they depend on that this machine lacks (dpkg does not list it as
#     installed). apt checks each .deb against the sha256 of the distribution's index, whose
#     signature it verified, and refuses a mismatch. Where the machine's index does not know
#     the packages (an image whose apt lists were removed), a private index is fetched first
#     into the folder (`apt-get update -o Dir::State::Lists=…`, as any user, signatures
#     checked against the system's keyrings).
#   - `dpkg-deb -x` of each into root/ (no maintainer script runs, nothing outside target/
#     is written);
#   - wrappers in bin/ (sshd, ssh, scp, ssh-keygen, sftp-server) that add the fetched libraries to the
#     library path when there are any, and make scp use this ssh (scp runs /usr/bin/ssh by
#     default);
#   - every binary checked with ldd: a library that nothing provides fails here, naming it;
#   - fetched.txt: name, version and sha256 of each .deb, written last. The fetch runs again
#     only when fetched.txt or a wrapper is missing.
# Concurrent callers wait on a lock. On failure, the last line on stderr says why.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
tools="$root/target/test-tools"
dir="$tools/openssh"
mkdir -p "$tools"
exec 9>"$tools/openssh.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi

fail() {
  echo "ensure-openssh.sh: $*" >&2
  exit 1
}

ready() {
  [ -s "$dir/fetched.txt" ] || return 1
  local tool
  for tool in sshd ssh scp ssh-keygen sftp-server; do
    [ -x "$dir/bin/$tool" ] || return 1
  done
}

if ready; then
  echo "$dir"
  exit 0
fi

for tool in apt-get apt-cache dpkg-deb dpkg-query ldd sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: the tests fetch OpenSSH with apt-get download and dpkg-deb -x"
done

echo "fetching OpenSSH for the device tests into target/test-tools/openssh (apt-get download, about 2 MB, once)" >&2
new="$dir.new"
rm -rf "$new"
mkdir -p "$new/debs" "$new/root" "$new/bin"
# apt as this user: no switch to the _apt user (root would otherwise warn that it cannot).
apt_opts=(-q -o "APT::Sandbox::User=$(id -un)")

# Whether the index offers the packages for download (an installed package is listed even when
# no source offers it).
known() {
  apt-get "${apt_opts[@]}" --print-uris download openssh-server openssh-client openssh-sftp-server >/dev/null 2>&1
}
if ! known; then
  echo "the machine's apt index does not offer openssh-server: fetching a private index into target/test-tools/openssh.new/apt" >&2
  mkdir -p "$new/apt/lists/partial" "$new/apt/cache/archives/partial"
  apt_opts+=(-o "Dir::State::Lists=$new/apt/lists" -o "Dir::Cache=$new/apt/cache" -o "Debug::NoLocking=1")
  apt-get "${apt_opts[@]}" update >&2 || fail "apt-get update into a private index failed (no network, or no sources in /etc/apt?)"
  known || fail "no apt source of this machine offers openssh-server"
fi

# The library packages `$@` depend on, one per line.
lib_depends() {
  apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "$@" \
    | sed -n 's/^ *|\{0,1\}\(Pre\)\{0,1\}Depends: \(lib[^ <>]*\)$/\2/p' | sort -u
}

installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

packages=(openssh-server openssh-client openssh-sftp-server)
todo=("${packages[@]}")
while [ "${#todo[@]}" -gt 0 ]; do
  next=()
  while read -r lib; do
    [ -n "$lib" ] || continue
    installed "$lib" && continue
    case " ${packages[*]} " in *" $lib "*) continue ;; esac
    packages+=("$lib")
    next+=("$lib")
  done < <(lib_depends "${todo[@]}")
  todo=("${next[@]+"${next[@]}"}")
done

(cd "$new/debs" && apt-get "${apt_opts[@]}" download "${packages[@]}" >&2) \
  || fail "apt-get download ${packages[*]} failed (see above)"
rm -rf "$new/apt"

for deb in "$new"/debs/*.deb; do
  dpkg-deb -x "$deb" "$new/root"
  printf '%s %s sha256:%s\n' \
    "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
    "$(sha256sum "$deb" | cut -d' ' -f1)" >>"$new/fetched.tmp"
done

# The folders of the fetched libraries, as they will be after the rename.
libs=""
while read -r libdir; do
  libs="${libs:+$libs:}$dir/${libdir#"$new"/}"
done < <(find "$new/root" \( -name '*.so' -o -name '*.so.*' \) \( -type f -o -type l \) -printf '%h\n' | sort -u)

binaries=(usr/sbin/sshd usr/bin/ssh usr/bin/scp usr/bin/ssh-keygen usr/lib/openssh/sftp-server)
# OpenSSH 9.8 and later: sshd runs sshd-session (and 10.0 sshd-auth) for each connection.
for helper in usr/lib/openssh/sshd-session usr/lib/openssh/sshd-auth; do
  [ -e "$new/root/$helper" ] && binaries+=("$helper")
done
for bin in "${binaries[@]}"; do
  [ -x "$new/root/$bin" ] || fail "the fetched packages hold no $bin"
  missing="$({ LD_LIBRARY_PATH="${libs//"$dir"/"$new"}" ldd "$new/root/$bin" || true; } | sed -n 's/^[[:space:]]*\([^ ]*\) => not found$/\1/p' | tr '\n' ' ')"
  [ -z "$missing" ] || fail "$bin needs ${missing% }, which neither this machine nor the fetched packages provide"
done

wrapper() {
  local name="$1" target="$2"
  shift 2
  {
    echo '#!/bin/sh'
    echo "# $name of the packages in fetched.txt (written by xtask/tests/tools/ensure-openssh.sh)"
    if [ -n "$libs" ]; then
      # shellcheck disable=SC2016 # the wrapper expands it
      printf 'LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexport LD_LIBRARY_PATH\n' "$libs"
    fi
    printf 'exec %q' "$dir/root/$target"
    for arg in "$@"; do printf ' %q' "$arg"; done
    echo ' "$@"'
  } >"$new/bin/$name"
  chmod +x "$new/bin/$name"
}
wrapper sshd usr/sbin/sshd
wrapper ssh usr/bin/ssh
wrapper scp usr/bin/scp -S "$dir/bin/ssh"
wrapper ssh-keygen usr/bin/ssh-keygen
wrapper sftp-server usr/lib/openssh/sftp-server

mv "$new/fetched.tmp" "$new/fetched.txt"
rm -rf "$dir"
mv "$new" "$dir"
echo "$dir"
