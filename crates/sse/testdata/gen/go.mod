module tessera.invalid/sse/testdata/gen

go 1.22

require (
	github.com/minio/sio v0.4.1
	golang.org/x/crypto v0.23.0
)

require (
	golang.org/x/sys v0.20.0 // indirect
)
