package main

import (
	"github.com/spf13/cobra"

	"cnbench/internal/vm/agent"
)

func newGuestAgentCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "guest-agent",
		Short:  "Run as the init and agent of a cnbench guest VM (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return agent.Main()
		},
	}
}
