module github.com/sessionmedic/sessionmedic

go 1.26.8

require (
	github.com/go-json-experiment/json v0.0.0-20260820222146-c27c302e5fc3
	github.com/gofrs/flock v0.13.1
	github.com/lmittmann/tint v1.2.1
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.47.0
)

require github.com/fsnotify/fsnotify v1.10.1 // indirect
