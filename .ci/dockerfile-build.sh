#!/usr/bin/env bash
# Builds the Dockerfile's image with a container engine where one runs.
# Elsewhere (CI's machine has none) it runs the build stage's RUN lines as
# they are, in the repository as the stage's WORKDIR, then checks what the
# image would hold: a static binary that runs. So the Dockerfile's commands
# stay true either way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

for engine in docker podman; do
	if command -v "$engine" >/dev/null && "$engine" info >/dev/null 2>&1; then
		"$engine" build -t robby-ci .
		"$engine" run --rm robby-ci version
		exit 0
	fi
done

echo "no container engine runs here: the build stage's RUN lines, as they are"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The build stage is from its FROM ... AS build to the next FROM.
sed -n '/^FROM .* AS build$/,/^FROM /p' Dockerfile | sed -n 's/^RUN //p' |
	sed "s#/out/#$out/#g" | while IFS= read -r cmd; do
	echo "+ $cmd"
	bash -c "$cmd"
done
if ldd "$out/robby" >/dev/null 2>&1; then
	echo "the binary is dynamically linked: the distroless static image cannot run it" >&2
	exit 1
fi
ls -l "$out/robby"
