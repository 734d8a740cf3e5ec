// SPDX-License-Identifier: Apache-2.0

// Command shoal-trainer is a stand-in for a training job that
// checkpoints (docs/checkpoints.md). It prints where it resumes from (the
// SHOAL_RESUME_* environment and the resume file), then counts steps and
// prints a checkpoint line (SHOAL_CHECKPOINT) every --checkpoint-every
// steps, which the agent passes on to the hub. On SIGTERM — a preemption
// notice — it saves (--save-time) and prints one for the step it reached,
// then exits with --exit-on-notice, or else keeps running
// until it is killed, so that only the hub ending its grace stops it
// early. With --until it exits 0 at that step.
//
// Its serve mode (shoal-trainer serve, serve.go) stands in for a model
// server of an inference replica.
//
//	shoal-trainer [train] [flags]   train (the default)
//	shoal-trainer serve [flags]     serve HTTP
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func main() {
	args := os.Args[1:]
	mode := "train"
	if len(args) > 0 && (args[0] == "train" || args[0] == "serve") {
		mode, args = args[0], args[1:]
	}
	if mode == "serve" {
		os.Exit(serve(args))
	}
	train(args)
}

// train is the train mode: flags as before the serve mode came, without a
// subcommand.
func train(args []string) {
	fs := flag.NewFlagSet("shoal-trainer", flag.ExitOnError)
	every := fs.Duration("step-every", 200*time.Millisecond, "time per step")
	ckptEvery := fs.Int64("checkpoint-every", 10, "steps between checkpoints (0: only on SIGTERM)")
	until := fs.Int64("until", 0, "exit 0 at this step (0: run until killed)")
	prefix := fs.String("uri-prefix", "file:///checkpoints/", "checkpoint URIs are this plus step-N")
	save := fs.Duration("save-time", 2*time.Second, "how long saving the checkpoint on SIGTERM takes")
	exit := fs.Bool("exit-on-notice", false, "exit 0 once the checkpoint of SIGTERM is printed, instead of waiting to be killed")
	_ = fs.Parse(args) // ExitOnError

	step := int64(0)
	if s := os.Getenv(v1alpha1.EnvResumeStep); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "trainer: %s=%q: %v\n", v1alpha1.EnvResumeStep, s, err)
			os.Exit(1)
		}
		step = n
		fmt.Printf("resume: env step=%d uri=%s\n", n, os.Getenv(v1alpha1.EnvResumeURI))
		b, err := os.ReadFile(filepath.Join(v1alpha1.ResumeMountPath, v1alpha1.ResumeFileName))
		if err != nil {
			fmt.Printf("resume: file unreadable: %v\n", err)
		} else {
			fmt.Printf("resume: file %s\n", b)
		}
	} else {
		fmt.Println("resume: none, starting at step 0")
	}
	// PID 1 of its container: a signal without a handler would be ignored.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		select {
		case <-term:
			fmt.Printf("notice: preempted at step %d; saving\n", step)
			time.Sleep(*save)
			checkpoint(*prefix, step)
			if *exit {
				return
			}
			signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
			for { // wait to be killed
				time.Sleep(time.Hour)
			}
		case <-tick.C:
			step++
			if *ckptEvery > 0 && step%*ckptEvery == 0 {
				checkpoint(*prefix, step)
			}
			if *until > 0 && step >= *until {
				fmt.Printf("done at step %d\n", step)
				return
			}
		}
	}
}

// checkpoint prints the checkpoint line of step.
func checkpoint(prefix string, step int64) {
	b, _ := json.Marshal(v1alpha1.CheckpointReport{Step: step, URI: fmt.Sprintf("%sstep-%d", prefix, step), Time: time.Now().UTC()})
	fmt.Printf("%s%s\n", v1alpha1.CheckpointLinePrefix, b)
}
