package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// An agent's runs bound to a stored conversation: a second agent (another
// process, after a restart) continues it.
func ExampleStore_withConversation() {
	model := robbytest.NewServer() // a scripted model
	defer model.Close()
	model.Reply(robbytest.Text("Nice to meet you, Ada."), robbytest.Text("You are Ada."))

	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "conversations.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	for _, prompt := range []string{"I am Ada.", "Who am I?"} {
		agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"))
		if err != nil {
			log.Fatal(err)
		}
		res, err := agent.Run(ctx, prompt, robby.WithConversation(store, "user-1", "intro"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Text)
		agent.Close()
	}
	c, _, err := store.Load(ctx, "user-1", "intro")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q: %d messages\n", c.Title, c.Messages)
	// Output:
	// Nice to meet you, Ada.
	// You are Ada.
	// "I am Ada.": 4 messages
}
