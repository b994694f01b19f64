# A small static image of the robby command (docs/DEPLOY.md):
#   docker build -t robby .
#   docker run -p 8080:8080 -v robby-data:/data -e ROBBY_TOKEN=alice:s3cret -e OPENAI_API_KEY \
#     -e OPENAI_BASE_URL=https://api.openai.com/v1 -e ROBBY_MODEL=gpt-4o-mini robby
# CI runs the build stage's RUN lines as they are, with or without a container engine.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# The modules first, so a change of code does not download them again.
COPY go.work go.work.sum go.mod go.sum ./
COPY cmd/robby/go.mod cmd/robby/go.sum cmd/robby/
COPY temporal/go.mod temporal/go.sum temporal/
RUN go mod download
COPY . .
# No cgo (SQLite is pure Go), no symbol tables, no paths of this machine.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/robby ./cmd/robby
RUN /out/robby version

# distroless/static: CA certificates, /etc/passwd with a nonroot user, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/robby /usr/local/bin/robby
WORKDIR /data
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/robby"]
# Off loopback robby serve needs a token: give ROBBY_TOKEN (USER:TOKEN) or mount a -token-file.
CMD ["serve", "-addr", ":8080", "-store", "/data/chats.db"]
