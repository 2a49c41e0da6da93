package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/probectl/probectl/internal/exit"
)

// askYes asks question on the terminal; anything but yes cancels with the cancelled message
// (exit 2, nothing changed).
func askYes(f *factory, question, cancelled string) error {
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(f.IO.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return exit.UsageError(errors.New(cancelled))
}
