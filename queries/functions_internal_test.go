package queries

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFunctionBodiesReadUpSectionsAndTheLastDefinitionWins(t *testing.T) {
	t.Parallel()
	out := map[form]string{}
	first := "-- +goose Up\nCREATE FUNCTION f(a int) RETURNS int LANGUAGE sql AS $probe$SELECT 1$probe$;\n" +
		"-- +goose Down\nCREATE FUNCTION g() RETURNS int LANGUAGE sql AS $probe$SELECT 9$probe$;\n"
	second := "-- +goose Up\nCREATE OR REPLACE FUNCTION public.F(a int) RETURNS int\nLANGUAGE sql AS $probe$\nSELECT 2\n$probe$;\n"
	require.NoError(t, functionBodies(upSection(first), out))
	require.NoError(t, functionBodies(upSection(second), out))
	require.Equal(t, map[string]string{"f": "\nSELECT 2\n"}, joinForms(out))
}

func TestFunctionBodiesRefuseABodyQuotedWithAnotherTag(t *testing.T) {
	t.Parallel()
	src := "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$SELECT 1$$;\n" +
		"CREATE FUNCTION g() RETURNS int LANGUAGE sql AS $probe$SELECT 2$probe$;\n"
	require.ErrorContains(t, functionBodies(src, map[form]string{}), "function f: body is not quoted with $probe$")
}

func TestFunctionBodiesKeepOverloadsApartAndForgetDroppedOnes(t *testing.T) {
	t.Parallel()
	out := map[form]string{}
	first := "CREATE FUNCTION f(a int, b numeric(10, 2) DEFAULT 1) RETURNS int LANGUAGE sql AS $probe$SELECT 2$probe$;\n"
	second := "DROP FUNCTION f(int, numeric);\n" +
		"CREATE FUNCTION f(a int) RETURNS int LANGUAGE sql AS $probe$SELECT 1$probe$;\n" +
		"CREATE FUNCTION f(a int, b numeric, c boolean) RETURNS int LANGUAGE sql AS $probe$SELECT 3$probe$;\n"
	require.NoError(t, functionBodies(first, out))
	require.Equal(t, map[form]string{{"f", 2}: "SELECT 2"}, out)
	require.NoError(t, functionBodies(second, out))
	require.Equal(t, map[string]string{"f": "SELECT 1" + overloadSeparator + "SELECT 3"}, joinForms(out))
}
