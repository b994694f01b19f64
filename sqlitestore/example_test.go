package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/sqlitestore"
)

// A conversation kept in a file, found again by its user and ID.
func ExampleOpen() {
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

	c, err := store.Create(ctx, robby.Conversation{User: "alice", ID: "trip", Title: "Trip to Lyon"})
	if err != nil {
		log.Fatal(err)
	}
	err = store.Append(ctx, "alice", c.ID, 0,
		robby.Message{Chat: []byte(`{"role":"user","content":"Trains to Lyon?"}`)},
		robby.Message{Chat: []byte(`{"role":"assistant","content":"Every hour from Paris."}`)})
	if err != nil {
		log.Fatal(err)
	}

	c, msgs, err := store.Load(ctx, "alice", "trip")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Title, c.Messages)
	for _, m := range msgs {
		fmt.Println(m.Seq, string(m.Chat))
	}
	_, _, err = store.Load(ctx, "bob", "trip")
	fmt.Println(err)
	// Output:
	// Trip to Lyon 2
	// 1 {"role":"user","content":"Trains to Lyon?"}
	// 2 {"role":"assistant","content":"Every hour from Paris."}
	// conversation "trip": robby: no such conversation
}
