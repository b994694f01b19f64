package guardrail

import (
	"context"
	"log/slog"
)

// Log logs a guard's verdict, never the text judged: an allowing verdict
// at debug level, the others at info.
func Log(ctx context.Context, log *slog.Logger, guard, boundary, tool, verdict, reason string) {
	level := slog.LevelInfo
	if verdict == "allow" {
		level = slog.LevelDebug
	}
	if log.Enabled(ctx, level) {
		log.Log(ctx, level, "robby: guard", slog.String("guard", guard), slog.String("boundary", boundary),
			slog.String("tool", tool), slog.String("verdict", verdict), slog.String("reason", reason))
	}
}
