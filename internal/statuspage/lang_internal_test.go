package statuspage

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
)

// TestEveryLanguageHasEveryLabel walks both language tables field by field, so that a label added
// to one language and not the other, or left out of either, fails here rather than showing as a
// blank on the page.
func TestEveryLanguageHasEveryLabel(t *testing.T) {
	t.Parallel()
	// Labels that may be empty, and in which language.
	mayBeEmpty := map[string][]string{
		"Units.Sep": {"zh-CN"}, // Chinese writes "3分5秒" with nothing between the parts
	}
	langs := []lang{english, chinese}
	for _, l := range langs {
		t.Run(l.Code+" has every label", func(t *testing.T) {
			t.Parallel()
			walkStrings(t, "", reflect.ValueOf(l), func(path, s string) {
				if s == "" && !slices.Contains(mayBeEmpty[path], l.Code) {
					t.Errorf("%s: %s is empty", l.Code, path)
				}
			})
			for _, c := range audit.Classes {
				require.NotEmpty(t, l.Classes[c], "%s: Classes[%s]", l.Code, c)
			}
		})
	}
	t.Run("both languages name the same classes and triggers", func(t *testing.T) {
		t.Parallel()
		en, zh := reflect.ValueOf(english), reflect.ValueOf(chinese)
		for i := range en.NumField() {
			if en.Field(i).Kind() != reflect.Map {
				continue
			}
			name := en.Type().Field(i).Name
			require.ElementsMatch(t, keys(en.Field(i)), keys(zh.Field(i)), name)
		}
	})
	t.Run("the two languages differ in code and path", func(t *testing.T) {
		t.Parallel()
		require.NotEqual(t, english.Code, chinese.Code)
		require.NotEqual(t, english.Path, chinese.Path)
	})
}

// walkStrings calls fn with every string in v (a struct, map or string), named by its path
// ("Units.Sep", "Classes[open]").
func walkStrings(t *testing.T, path string, v reflect.Value, fn func(path, s string)) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		fn(path, v.String())
	case reflect.Struct:
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if path != "" {
				name = path + "." + name
			}
			walkStrings(t, name, v.Field(i), fn)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walkStrings(t, path+"["+k.String()+"]", v.MapIndex(k), fn)
		}
	default:
		t.Fatalf("%s: a %s in a language table: teach walkStrings what to check in it", path, v.Kind())
	}
}

func keys(m reflect.Value) []string {
	out := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		out = append(out, k.String())
	}
	return out
}
