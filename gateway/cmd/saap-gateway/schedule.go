package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store/natskv"
)

// schedulerOptions are the flags of the scheduler.
type schedulerOptions struct {
	on      bool
	file    string
	name    string
	tick    time.Duration
	catchUp time.Duration
	stateKV string
}

func (s *schedulerOptions) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.on, "scheduler", false, "fire the profiles' cron schedules (a CronStartEvent per occurrence); replicas elect one leader")
	fs.StringVar(&s.file, "schedules", "", "JSON file listing the schedules, [{\"agent_class\", \"agent_id\", \"cron\"}]; default: the profiles' with -profiles, else those kept in the state store")
	fs.StringVar(&s.name, "scheduler-name", "default", "name of the scheduler's state: schedulers of one name share a leader")
	fs.DurationVar(&s.tick, "scheduler-tick", schedule.DefaultTick, "time between two looks at the schedules")
	fs.DurationVar(&s.catchUp, "scheduler-catch-up", schedule.DefaultCatchUp, "how far back missed occurrences still fire")
	fs.StringVar(&s.stateKV, "scheduler-kv-bucket", natskv.DefaultBucket, "JetStream key-value bucket of the scheduler's lease, claims and stored schedules")
}

// startScheduler runs the scheduler until ctx ends, if -scheduler is set.
// profiles, if not nil, is where the schedules are read from unless
// -schedules names a file.
func startScheduler(ctx context.Context, b *natsbus.Bus, o *schedulerOptions, profiles schedule.Source, log *slog.Logger) error {
	if !o.on {
		if o.file != "" {
			return errors.New("-schedules needs -scheduler")
		}
		return nil
	}
	st, err := natskv.New(ctx, b.JetStream(), natskv.Config{Bucket: o.stateKV})
	if err != nil {
		return fmt.Errorf("scheduler state store: %w", err)
	}
	var src schedule.Source = schedule.NewStoreSource(st, o.name)
	if profiles != nil {
		src = profiles
	}
	if o.file != "" {
		list, err := readSchedules(o.file)
		if err != nil {
			return err
		}
		src = list
	}
	var announced sync.Once
	s, err := schedule.New(schedule.Config{
		Bus: b, Store: st, Source: src, Name: o.name, Tick: o.tick, CatchUp: o.catchUp, Logger: log,
		OnTick: func(r schedule.Report) {
			announced.Do(func() { fmt.Printf("saap-gateway: scheduler %s ticking (leader %v)\n", o.name, r.Leader) })
		},
	})
	if err != nil {
		return err
	}
	go func() { _ = s.Run(ctx) }()
	return nil
}

// readSchedules reads and checks a JSON list of schedules.
func readSchedules(path string) (schedule.List, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list schedule.List
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, s := range list {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
	}
	return list, nil
}
