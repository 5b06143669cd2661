// Package statusutil stands in for the collector's internal module of the same path, whose
// v0.164.0 the Go proxy does not serve (see ../README.md). It provides the two functions the
// OTLP receiver and exporters call, written for otelprof from their documented behaviour.
package statusutil

import (
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NewStatusFromMsgAndHTTPCode converts an HTTP status code into the gRPC status an OTLP client
// acts on (retry or not), following gRPC's HTTP-to-gRPC mapping, except that 400 means an
// invalid argument and 429 means resource exhaustion, as the OTLP specification asks.
func NewStatusFromMsgAndHTTPCode(errMsg string, statusCode int) *status.Status {
	code := codes.Unknown
	switch statusCode {
	case http.StatusBadRequest:
		code = codes.InvalidArgument
	case http.StatusUnauthorized:
		code = codes.Unauthenticated
	case http.StatusForbidden:
		code = codes.PermissionDenied
	case http.StatusNotFound:
		code = codes.Unimplemented
	case http.StatusTooManyRequests:
		code = codes.ResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		code = codes.Unavailable
	}
	return status.New(code, errMsg)
}

// GetRetryInfo returns the RetryInfo detail of st (the server's requested back-off), or nil.
func GetRetryInfo(st *status.Status) *errdetails.RetryInfo {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri
		}
	}
	return nil
}
