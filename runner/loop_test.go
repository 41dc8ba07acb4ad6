package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestLoop(t *testing.T) {
	t.Parallel()
	t.Run("plan_run_publish_each_firing_then_clean_stop", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var steps []string
		step := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, s)
		}
		ctx, cancel := context.WithCancel(t.Context())
		running := make(chan struct{})
		p := Pipeline{
			Plan: func(_ context.Context, m time.Time) error {
				step(fmt.Sprintf("plan %v", m.Second() == 0))
				return nil
			},
			Run: func(ctx context.Context, m time.Time) error {
				step("run")
				close(running)
				<-ctx.Done() // a run in flight when SIGTERM comes
				step("run stopped")
				return errors.New("stopped")
			},
			Publish: func(ctx context.Context) error {
				step(fmt.Sprintf("publish ctx-live=%v", ctx.Err() == nil))
				return nil
			},
		}
		done := make(chan error)
		go func() {
			done <- Loop(ctx, LoopConfig{Pipeline: p, Spec: "@every 1s", Logger: slog.New(slog.DiscardHandler)})
		}()
		<-running
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"plan true", "run", "run stopped", "publish ctx-live=true"}
		if !slices.Equal(steps, want) {
			t.Errorf("steps %q, want %q: Loop returns only once the run in flight stopped and published", steps, want)
		}
	})
	t.Run("bad_schedule", func(t *testing.T) {
		t.Parallel()
		p := Pipeline{Plan: func(context.Context, time.Time) error { return nil },
			Run: func(context.Context, time.Time) error { return nil }, Publish: func(context.Context) error { return nil }}
		if err := Loop(t.Context(), LoopConfig{Pipeline: p, Spec: "every minute"}); err == nil {
			t.Error("a bad schedule was accepted")
		}
		if err := Loop(t.Context(), LoopConfig{}); err == nil {
			t.Error("an empty pipeline was accepted")
		}
	})
}
