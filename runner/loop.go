package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// Pipeline is what the loop does each minute, in order: plan the next
// minute, run it, publish. The same functions as cmd/plan, cmd/run and
// cmd/publish call (planner.PlanMinute, Run, site.Publish), in process, so
// the loop and cron take one code path.
type Pipeline struct {
	Plan    func(ctx context.Context, minute time.Time) error
	Run     func(ctx context.Context, minute time.Time) error
	Publish func(ctx context.Context) error
}

// LoopConfig configures Loop; its zero value plus a Pipeline runs every
// minute on the wall clock.
type LoopConfig struct {
	Pipeline Pipeline
	Spec     string       // cron schedule; "" means every minute ("* * * * *")
	Clock    Clock        // names the minute each firing plans; nil means SystemClock
	Logger   *slog.Logger // nil means no logs
}

// Loop runs the pipeline on the cron schedule, in the foreground, until ctx
// is done: each firing plans the next whole minute, runs it (which waits
// for that minute and may overlap the next firing's run, as with cron) and
// then publishes. When ctx is done no firing starts; the runs in flight
// stop starting checks, their checks in flight finish or are recorded as
// interrupted (see Run), and each publishes what it completed before Loop
// returns. Step errors are logged, never fatal: the next minute tries again.
func Loop(ctx context.Context, cfg LoopConfig) error {
	p := cfg.Pipeline
	if p.Plan == nil || p.Run == nil || p.Publish == nil {
		return errors.New("loop: the pipeline needs plan, run and publish")
	}
	if cfg.Spec == "" {
		cfg.Spec = "* * * * *"
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := cron.New(cron.WithLocation(time.UTC))
	_, err := c.AddFunc(cfg.Spec, func() {
		if ctx.Err() != nil {
			return
		}
		minute := cfg.Clock.Now().UTC().Truncate(time.Minute).Add(time.Minute)
		pipelineOnce(ctx, p, minute, cfg.Logger)
	})
	if err != nil {
		return fmt.Errorf("loop: schedule %q: %w", cfg.Spec, err)
	}
	cfg.Logger.Info("loop started", "schedule", cfg.Spec)
	c.Start()
	<-ctx.Done()
	cfg.Logger.Info("loop stopping: waiting for runs in flight")
	<-c.Stop().Done() // no new firing; waits for the jobs running
	return nil
}

// pipelineOnce plans, runs and publishes one minute.
func pipelineOnce(ctx context.Context, p Pipeline, minute time.Time, logger *slog.Logger) {
	log := logger.With("minute", minute.Format(time.RFC3339))
	if err := p.Plan(ctx, minute); err != nil {
		log.Error("plan failed", "err", err)
	} else if err := p.Run(ctx, minute); err != nil {
		log.Error("run failed", "err", err)
	}
	// Publish even when stopping: the checks completed are on disk and
	// their pages are due.
	if err := p.Publish(context.WithoutCancel(ctx)); err != nil {
		log.Error("publish failed", "err", err)
	}
}
