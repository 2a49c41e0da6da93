package settings

import (
	"errors"
	"fmt"
)

// Release is what a round needs of the release it runs under: its id and what it carries.
type Release struct {
	ID      int64
	Carried Carried
}

// Override is a carried setting whose flag was given and differs from the release's value; the
// round's summary shows it (with the flag that set it).
type Override struct {
	Setting Setting
	// Release and Round are the release's value and the one the round runs with, as text.
	Release string
	Round   string
}

// Request is what settings are made from.
type Request struct {
	// Release is the active release (nil: none recorded, the flags are used as given).
	Release *Release
	// Flags are the settings as the caller gave them: its flags, defaults where unset.
	Flags Settings
	// Changed says whether the caller set a setting (a flag on the command line; nil: none).
	Changed func(Setting) bool
	// Bounds checks the field table's bounds: on the flags, and on what the release ships that no
	// flag overrode, so that no release can switch the spacing promise off (run round, deploy
	// record). A worker's tick and the incident replay leave them out.
	Bounds bool
}

// Resolve makes a round's settings, the one place they are made and checked: every carried
// setting comes from the release unless the caller set its flag (an Override when the values
// differ), the rest from the flags, and the round records the release's id. The result is
// checked once: bounds (when asked) and Validate, lease included, every error joined. Errors are
// *Error values.
func Resolve(req Request) (Settings, []Override, error) {
	changed := req.Changed
	if changed == nil {
		changed = func(Setting) bool { return false }
	}
	var errs []error
	if req.Bounds {
		errs = append(errs, req.Flags.CheckBounds())
	}
	if req.Release == nil {
		if err := errors.Join(append(errs, req.Flags.Validate())...); err != nil {
			return req.Flags, nil, err
		}
		return req.Flags, nil, nil
	}
	out := req.Flags
	out.Carried = req.Release.Carried.WithDefaults()
	id := req.Release.ID
	out.ReleaseID = &id
	var overrides []Override
	for _, f := range CarriedFields() {
		if !changed(f.Name) {
			if req.Bounds && f.in != nil && !f.in(out) {
				e := NewError(f.Name, "the active release ships %s %s, out of bounds: must be %s; "+
					"record a release within bounds (probectl deploy record) or pass %s", f.Name, f.Value(out), f.Bound, f.Name)
				e.Subject = fmt.Sprintf("release #%d", id)
				errs = append(errs, e)
			}
			continue
		}
		from, to := f.Value(out), f.Value(req.Flags)
		f.copyTo(&out, req.Flags)
		if from != to {
			overrides = append(overrides, Override{Setting: f.Name, Release: from, Round: to})
		}
	}
	if err := errors.Join(append(errs, out.Validate())...); err != nil {
		return out, nil, err
	}
	return out, overrides, nil
}
