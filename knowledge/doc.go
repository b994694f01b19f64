// Package knowledge is a knowledge base for robby agents. Documents are indexed
// in one SQLite file, and searched by keyword and by meaning. The model gets
// them as a tool it calls, or as passages added to a prompt. It complements
// package robby, using only its exported API.
//
//	kb, err := knowledge.Open("kb.db",
//		knowledge.WithEmbedder(knowledge.NewOpenAIEmbedder("ai/mxbai-embed-large",
//			option.WithBaseURL("http://localhost:12434/engines/v1"))))
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer kb.Close()
//	if _, err := kb.AddDir(ctx, "docs"); err != nil {
//		log.Fatal(err)
//	}
//	agent, err := robby.New(robby.WithModel("ai/qwen2.5"), robby.WithTools(knowledge.Tool(kb)))
//
// # Indexing
//
// [Base.Add] takes [Document]s: text, Markdown or HTML, which is turned into
// text first. [Base.AddDir] takes a folder, walked recursively. Each document
// is cut into chunks of about [DefaultChunkSize] bytes. A chunk begins at a
// heading, a paragraph or a sentence, and never spans two sections. When chunks
// cut a section, each repeats the end of the chunk before. A document indexed
// again with the same content is skipped (its hash is kept). A changed one has
// its chunks replaced. [Base.Delete] removes one by id, and AddDir removes the
// files gone from its folder. A document that cannot be indexed (such as HTML
// nested deeper than the parser allows) is skipped. A [DocumentError] names it;
// the others are indexed.
//
// # Search
//
// [Base.Search] ranks chunks by BM25 over a full-text index (SQLite FTS5,
// Porter stemming). It can also rank them by cosine similarity of embeddings.
// Or it fuses both with reciprocal rank fusion ([Hybrid], the default with an
// embedder). Without an [Embedder], search is by keyword alone. Metadata
// filters keep the chunks of documents with given values.
//
// Embeddings come from any OpenAI-compatible /v1/embeddings endpoint
// ([NewOpenAIEmbedder]: OpenAI, Ollama, llama.cpp, Docker Model Runner, vLLM).
// They are asked for in batches, with openai-go's retries. They are cached in
// the file by model and content: re-indexing pays only for chunks that changed.
//
// Vector search is exact: every vector is compared with the query's. It scans
// one contiguous []float32 held in memory, 1,032 bytes a chunk at 256
// dimensions. The vectors are loaded on the first search, and reloaded after a
// change by any process. At 100,000 chunks a vector query takes about 18 ms on
// a busy 2-core machine (docs/BENCHMARKS.md). Past about a million chunks, or
// for many queries a second at high dimensions, an approximate index (HNSW,
// IVF) is needed. Plug one in through [Retriever], as for pgvector or a search
// server reached over MCP. Keyword search costs what SQLite's FTS5 costs. It
// grows with the number of chunks that hold the query's words.
//
// # Use by an agent
//
// [Tool] is the tool search_knowledge, which the model calls with a query and
// optional filters. The passages it returns carry their source and lines, which
// the model is asked to cite. [Context] searches for a prompt and makes a
// system message of the passages found, within a token budget. It is for
// programs that add knowledge to every prompt instead. Its passages are fenced
// by lines holding a nonce drawn for the message. A document's text so cannot
// pose as another passage, from another source. The tool's passages are JSON
// values, which their text cannot leave.
//
// # Storage
//
// The tables are named kb_*, so the file may be shared with other tables, such
// as those of a session store ([OpenDB] takes an open database). A [Base] is
// safe for concurrent use.
package knowledge
