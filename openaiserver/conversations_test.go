package openaiserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/pgstore"
	"github.com/robby-go/robby/robbytest"
)

func userItem(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// itemTexts lists a page's items as role: text.
func itemTexts(page []conversations.ConversationItemUnion) []string {
	var out []string
	for _, it := range page {
		m := it.AsMessage()
		for _, c := range m.Content {
			out = append(out, string(m.Role)+": "+c.Text)
		}
	}
	return out
}

func TestConversations(t *testing.T) {
	for name, store := range map[string]func(*testing.T) robby.Store{"sqlite": newStore, "postgres": newPGStore} {
		t.Run(name, func(t *testing.T) { testConversations(t, store(t)) })
	}
}

func newPGStore(t *testing.T) robby.Store {
	dsn := pgtest.Start(t).NewDatabase(t)
	s, err := pgstore.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func testConversations(t *testing.T, store robby.Store) {
	srv := newServer(t)
	url := serveResponses(t, srv, openaiserver.Options{Store: store, Tokens: map[string]string{"a": "alice", "b": "bob"}})
	alice, bob := clientFor(url, "a"), clientFor(url, "b")
	ctx := t.Context()

	conv, err := alice.Conversations.New(ctx, conversations.ConversationNewParams{
		Items:    []responses.ResponseInputItemUnionParam{userItem("one"), userItem("two")},
		Metadata: shared.Metadata{"topic": "numbers"},
	})
	require.NoError(t, err)
	assert.Equal(t, "conversation", string(conv.Object))
	assert.Equal(t, map[string]any{"topic": "numbers"}, conv.Metadata)

	added, err := alice.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{
		Items: []responses.ResponseInputItemUnionParam{userItem("three")}})
	require.NoError(t, err)
	require.Len(t, added.Data, 1)
	assert.Equal(t, added.FirstID, added.Data[0].ID)

	// Newest first by default, in pages.
	page, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: openai.Int(2)})
	require.NoError(t, err)
	assert.Equal(t, []string{"user: three", "user: two"}, itemTexts(page.Data))
	assert.True(t, page.HasMore)
	assert.Equal(t, page.Data[1].ID, page.LastID)
	next, err := page.GetNextPage()
	require.NoError(t, err)
	assert.Equal(t, []string{"user: one"}, itemTexts(next.Data))
	assert.False(t, next.HasMore)
	asc, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	require.NoError(t, err)
	assert.Equal(t, []string{"user: one", "user: two", "user: three"}, itemTexts(asc.Data))

	item, err := alice.Conversations.Items.Get(ctx, conv.ID, asc.Data[1].ID, conversations.ItemGetParams{})
	require.NoError(t, err)
	assert.Equal(t, "two", item.AsMessage().Content[0].Text)

	// Bob sees none of it.
	_, err = bob.Conversations.Get(ctx, conv.ID)
	assertNotFound(t, err)
	_, err = bob.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	assertNotFound(t, err)
	_, err = bob.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userItem("x")}})
	assertNotFound(t, err)
	_, err = bob.Conversations.Delete(ctx, conv.ID)
	assertNotFound(t, err)
	_, err = bob.Conversations.Items.Delete(ctx, conv.ID, asc.Data[0].ID)
	assertNotFound(t, err)

	// A deleted item is gone, for the client and for the model.
	_, err = alice.Conversations.Items.Delete(ctx, conv.ID, asc.Data[1].ID)
	require.NoError(t, err)
	_, err = alice.Conversations.Items.Get(ctx, conv.ID, asc.Data[1].ID, conversations.ItemGetParams{})
	assertNotFound(t, err)

	srv.Reply(robbytest.Text("Four."))
	p := ask("And next?", "")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	resp, err := alice.Responses.New(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "Four.", resp.OutputText())
	assert.Equal(t, conv.ID, resp.Conversation.ID)
	var said []string
	for _, m := range srv.Requests()[0].Messages {
		said = append(said, m.Role+": "+m.Content)
	}
	assert.Equal(t, []string{"user: one", "user: three", "user: And next?"}, said)
	asc, err = alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	require.NoError(t, err)
	assert.Equal(t, []string{"user: one", "user: three", "user: And next?", "assistant: Four."}, itemTexts(asc.Data))

	// Bob cannot run in it either.
	_, err = bob.Responses.New(ctx, p)
	assertNotFound(t, err)

	conv, err = alice.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "counting"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"topic": "counting"}, conv.Metadata)
	got, err := alice.Conversations.Get(ctx, conv.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"topic": "counting"}, got.Metadata)

	del, err := alice.Conversations.Delete(ctx, conv.ID)
	require.NoError(t, err)
	assert.True(t, del.Deleted)
	_, err = alice.Conversations.Get(ctx, conv.ID)
	assertNotFound(t, err)
}

func assertNotFound(t *testing.T, err error) {
	t.Helper()
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
}

// TestConversationOfAResponse: a stored response's conversation is one of
// the Conversations API's too.
func TestConversationOfAResponse(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{Store: newStore(t)}), "")
	srv.Reply(robbytest.Text("Hello."))
	resp, err := client.Responses.New(t.Context(), ask("Hi", ""))
	require.NoError(t, err)
	// A response's ID is resp_, its conversation's ID, _ and a count.
	id := strings.TrimPrefix(resp.ID[:strings.LastIndexByte(resp.ID, '_')], "resp_")
	items, err := client.Conversations.Items.List(t.Context(), id, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	require.NoError(t, err)
	assert.Equal(t, []string{"user: Hi", "assistant: Hello."}, itemTexts(items.Data))
}

func TestConversationsErrors(t *testing.T) {
	srv := newServer(t)
	client := clientFor(serveResponses(t, srv, openaiserver.Options{}), "")
	_, err := client.Conversations.New(t.Context(), conversations.ConversationNewParams{})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode, "no store")
	assert.Contains(t, apiErr.Message, "-store")

	client = clientFor(serveResponses(t, srv, openaiserver.Options{Store: newStore(t)}), "")
	_, err = client.Conversations.New(t.Context(), conversations.ConversationNewParams{Metadata: shared.Metadata{"openaiserver.deleted": "[]"}})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 400, apiErr.StatusCode)
	p := ask("hi", "")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_none")}
	_, err = client.Responses.New(t.Context(), p)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 404, apiErr.StatusCode)
	assert.Equal(t, "conversation", apiErr.Param)
	assert.Empty(t, srv.Requests())
}
