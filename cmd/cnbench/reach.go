package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
)

// newReachCommand is what a cluster's client pod runs to learn that a
// Service carries its connections before a case measures through it.
func newReachCommand() *cobra.Command {
	var within time.Duration
	cmd := &cobra.Command{
		Use:    "reach HOST:PORT",
		Short:  "Connect over TCP until a connection succeeds (internal)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			for {
				conn, err := net.DialTimeout("tcp", args[0], time.Second)
				if err == nil {
					conn.Close()
					fmt.Fprintf(cmd.OutOrStdout(), "reached %s after %s\n", args[0], time.Since(start).Round(time.Millisecond))
					return nil
				}
				if time.Since(start) > within {
					return fmt.Errorf("%s not reached within %s: %w", args[0], within, err)
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().DurationVar(&within, "within", 30*time.Second, "give up after this long")
	return cmd
}
