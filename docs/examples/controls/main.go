// Inject a Produce error into a wireserver test broker, list the active controls, undo it.
// Run: WIRESERVER_CONTROLS_URL=http://127.0.0.1:PORT/controls go run main.go
// (the standard library only: net/http and encoding/json).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// send makes one request, prints "METHOD URL STATUS BODY" and returns the body.
func send(method, url, body string) []byte {
	request, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	request.Header.Set("Content-Type", "application/json")
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		panic(err)
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(response.Body)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s %s %d %s\n", method, url, response.StatusCode, answer)
	return answer
}

func main() {
	controls := os.Getenv("WIRESERVER_CONTROLS_URL")
	if controls == "" {
		fmt.Fprintln(os.Stderr, "set WIRESERVER_CONTROLS_URL to the broker's /controls URL")
		os.Exit(2)
	}
	// The next 3 Produce requests are answered NOT_LEADER_OR_FOLLOWER instead of handled.
	added := send("POST", controls,
		`{"control": "error", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}`)
	var control struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(added, &control); err != nil {
		panic(err)
	}
	send("GET", controls, "")
	send("DELETE", fmt.Sprintf("%s/%d", controls, control.ID), "")
}
