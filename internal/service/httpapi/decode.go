package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// decodeJSON reads exactly one JSON object from the request body into v,
// strictly: unknown fields, trailing data and values of the wrong type are
// invalid_request errors naming what is wrong; a body over the limit is
// request_too_large. Required fields are checked by the caller (request
// structs use pointer fields, so a missing field stays nil).
func decodeJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return invalid("request body must hold exactly one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return invalid("request body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("request body is truncated JSON")
	case errors.As(err, &se):
		return invalid("request body is malformed JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		if te.Field == "" {
			return invalid("request body must be a JSON object, not %s", te.Value)
		}
		return invalid("field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return invalid("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return invalid("request body is not valid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32":
		return "an integer"
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	}
	return goKind
}

// missing returns an invalid_request error naming the first required field
// that is absent (nil), or nil.
func missing(fields ...field) error {
	for _, f := range fields {
		if f.absent {
			return invalid("field %q is required", f.name)
		}
	}
	return nil
}

type field struct {
	name   string
	absent bool
}

func str(name string, p *string) field { return field{name, p == nil} }
func num(name string, p *int64) field  { return field{name, p == nil} }

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(c echo.Context, name string, def, lo, hi int64) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalid("query parameter %s must be an integer between %d and %d", name, lo, hi)
	}
	return n, nil
}
