package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/robby-go/robby"
)

var chatCommand = commandSpec{
	name: "chat", synopsis: "robby chat [flags]",
	summary: "hold a conversation, one prompt a line; -session NAME keeps it across restarts",
	about: "Holds a conversation: one prompt a line from stdin, each answer streamed to stdout, tool steps to stderr.\n" +
		"A line /name runs the MCP prompt name, /help lists them. With -session NAME, the conversation is saved message\n" +
		"by message in -store; run it again with the same name to continue. Exits with status 1 if the last answer failed.",
	env: slices.Concat(agentEnv, []string{storeEnv + "\tthe sessions' file, when -store is not given"}), setup: setupChat,
}

func setupChat(c *command) func(context.Context) error {
	var f agentFlags
	f.kb.modes = true
	f.register(c.fs)
	session := c.fs.String("session", "", "keep the conversation under this name in the store, across restarts")
	storePath := c.fs.String("store", "", "SQLite `file` of the sessions, made if missing in a directory that exists (env "+storeEnv+
		"); default conversations.db in robby's data directory, ~/.local/share/robby on Linux, made with it")
	return func(ctx context.Context) error { return chat(ctx, c, &f, *session, *storePath) }
}

// chat holds the conversation of robby chat.
func chat(ctx context.Context, c *command, f *agentFlags, session, storePath string) error {
	stdin, stdout, stderr := c.stdin, c.stdout, c.stderr
	agent, err := f.newAgent(stderr)
	if err != nil {
		return err
	}
	defer f.close()
	defer agent.Close()
	var opts []robby.RunOption // of every run
	if session != "" {
		path, makeDir := storePath, false
		if path == "" {
			path, makeDir = defaultStorePath(), true
		}
		store, err := openStore(ctx, path, makeDir)
		if err != nil {
			return err
		}
		defer store.Close()
		opts = append(opts, robby.WithConversation(store, "", session))
		if conv, _, err := store.Load(ctx, "", session); err == nil {
			fmt.Fprintf(stderr, "session %q: %d messages, last on %s.\n", session, conv.Messages, conv.Updated.Local().Format("2006-01-02 15:04"))
		}
	}
	prompts := loadPromptCommands(ctx, agent, stderr)
	fmt.Fprintf(stderr, "robby chat with %s at %s; %d tools", f.model, f.baseURL, len(agent.Tools()))
	if len(prompts.names) > 0 {
		fmt.Fprintf(stderr, ", %d MCP prompts", len(prompts.names))
	}
	fmt.Fprintln(stderr, ". /help lists the commands; /exit or Ctrl-D ends.")
	out := f.screen(stdout, stderr)
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	var last error // of the last answer, for the exit status
	for {
		fmt.Fprint(stderr, "› ")
		if !in.Scan() {
			fmt.Fprintln(stderr)
			if err := in.Err(); err != nil {
				return err
			}
			if last != nil {
				return shownError{last}
			}
			return nil
		}
		prompt := strings.TrimSpace(in.Text())
		if prompt == "" {
			continue
		}
		var err error
		cmd, ok := strings.CutPrefix(prompt, "/")
		switch {
		case ok && (cmd == "exit" || cmd == "quit"):
			return nil
		case ok && (cmd == "help" || cmd == "?" || cmd == ""):
			chatHelp(stderr, prompts)
			continue
		case ok && !strings.HasPrefix(cmd, "/"):
			err = prompts.run(ctx, cmd, in, out, opts...)
		default:
			if ok {
				prompt = cmd // "//text" says "/text"
			}
			var kbOpts []robby.RunOption
			if kbOpts, err = f.kb.contextFor(ctx, f.kbase, prompt); err == nil {
				err = out.answer(ctx, agent, prompt, append(kbOpts, opts...)...)
			}
		}
		last = err
		if last != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A failed answer leaves the conversation as it was (in a
			// session, with the error kept in its history): go on.
			report(stderr, explain(last, f.baseURL))
		}
	}
}

// chatHelp lists chat's commands and the MCP servers' prompts.
func chatHelp(w io.Writer, prompts *promptCommands) {
	fmt.Fprint(w, "Commands:\n"+
		"  /help, /?      this list\n"+
		"  /exit, /quit   end the chat, with status 0 (Ctrl-D ends it too)\n"+
		"  //text         send text that starts with a slash\n"+
		"  /name ...      run an MCP prompt, listed below\n")
	prompts.help(w)
}
