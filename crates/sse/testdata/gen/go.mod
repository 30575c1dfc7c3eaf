module tessera.invalid/sse/testdata/gen

go 1.22

require github.com/minio/sio v0.4.1

require (
	golang.org/x/crypto v0.23.0 // indirect
	golang.org/x/sys v0.20.0 // indirect
)
