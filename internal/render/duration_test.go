package render_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/when"
)

func TestDurationIsWrittenOneWay(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		46 * time.Millisecond:   "0.046s",
		1061 * time.Millisecond: "1.061s",
		2 * time.Second:         "2s",
		17*time.Millisecond + 400*time.Microsecond: "0.017s",
		59999 * time.Millisecond:                   "59.999s",
		59999999 * time.Microsecond:                "59.999s",
		10 * time.Minute:                           "10m",
		13*time.Minute + 35*time.Second:            "13m35s",
		12 * time.Hour:                             "12h",
		30*time.Hour + 90*time.Second:              "1d6h1m30s",
		-2 * time.Second:                           "-2s",
	} {
		assert.Equal(t, want, render.Duration(d), d.String())
	}
}

// What a table shows, a flag reads back: the display is the flags' grammar.
func TestDurationReadsBackAsAFlag(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{46 * time.Millisecond, 10 * time.Minute, 12 * time.Hour, 30*time.Hour + 90*time.Second, 15 * 24 * time.Hour} {
		got, err := when.ParseDuration(render.Duration(d))
		assert.NoError(t, err)
		assert.Equal(t, d, got)
	}
}

func TestDurationInChineseHasTheSameGrammar(t *testing.T) {
	t.Parallel()
	zh := render.DurationUnits{Day: "天", Hour: "小时", Minute: "分", Second: "秒"}
	assert.Equal(t, "40分", render.DurationIn(40*time.Minute, zh))
	assert.Equal(t, "3分52秒", render.DurationIn(3*time.Minute+52*time.Second, zh))
	assert.Equal(t, "1天2小时", render.DurationIn(26*time.Hour, zh))
	assert.Equal(t, "0.08秒", render.DurationIn(80*time.Millisecond, zh))
}
