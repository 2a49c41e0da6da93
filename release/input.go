package release

import "github.com/probectl/probectl/internal/input"

// The inputs release's errors name (see internal/input): the fields of VerifyRequest,
// RecordRequest and RollbackRequest as the commands' flags give them.
const (
	InputRounds     input.Name = "rounds"
	InputWait       input.Name = "wait"
	InputWindow     input.Name = "window"
	InputMaxOkDrop  input.Name = "max_ok_drop"
	InputRelease    input.Name = "release"
	InputEvery      input.Name = "every"
	InputVersion    input.Name = "version"
	InputActor      input.Name = "actor"
	InputToPrevious input.Name = "to_previous" // the way back WayPrevious
	InputFanoutOff  input.Name = "fanout_off"  // the way back WayFanoutOff
	InputForce      input.Name = "force"
	InputReason     input.Name = "reason"
)
