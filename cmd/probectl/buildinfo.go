package main

import (
	"runtime/debug"
)

// unstamped is what main's version variables hold when no release build's ldflags set them.
const unstamped = "dev"

// currentBuild is the version of this binary: the one goreleaser stamped through ldflags, else what
// the Go toolchain recorded itself (`go install module@v1.2.3` records the module's version,
// `go build` in a checkout the VCS revision), else "dev".
func currentBuild() buildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return resolveBuild(buildInfo{Version: version, Commit: commit, Date: date}, info)
}

// resolveBuild fills what ldflags did not stamp from the toolchain's build info (nil when the
// binary carries none). A stamped version wins whole: a release build says what it was built as.
func resolveBuild(stamped buildInfo, info *debug.BuildInfo) buildInfo {
	if stamped.Version != unstamped || info == nil {
		return stamped
	}
	b := stamped
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	var revision, modified, at string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	if revision != "" {
		if len(revision) > 7 {
			revision = revision[:7]
		}
		if modified == "true" {
			revision += "-dirty"
		}
		b.Commit = revision
	}
	if at != "" {
		b.Date = at
	}
	return b
}
