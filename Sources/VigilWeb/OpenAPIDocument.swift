/// The API's description, served at `/api/v1/openapi.yaml` (OpenAPI 3.0). `scripts/box-api-check`
/// (run by `scripts/test`) checks a running box's API against it with schemathesis.
enum OpenAPIDocument {
    static let text = """
    openapi: 3.0.3
    info:
      title: Vigil box API
      version: "1"
      description: >
        The box's state and the commands staff give it: the same commands the CLI and the control
        socket send (NodeCommand), answered once their event is durable (NodeReply).
        Scripts authenticate with a bearer token (`vigil http token add NAME`).
    servers:
      - url: /api/v1
    security:
      - bearer: []
    # What every command route answers (a YAML anchor: the routes below share it).
    x-command-responses: &commandResponses
      "200": {$ref: "#/components/responses/Reply"}
      "400": {$ref: "#/components/responses/Problem"}
      "401": {$ref: "#/components/responses/Problem"}
      "403": {$ref: "#/components/responses/Problem"}
      "409": {$ref: "#/components/responses/Reply"}
      "413": {$ref: "#/components/responses/Problem"}
      "422": {$ref: "#/components/responses/Reply"}
      "503": {$ref: "#/components/responses/ReplyOrProblem"}
      "507": {$ref: "#/components/responses/Reply"}
    paths:
      /status:
        get:
          summary: The box now, or as it was at a past moment (rebuilt from its log).
          parameters:
            - {name: at, in: query, required: false, schema: {type: string}, description: "ISO 8601 time or a duration ago (90m ago)"}
            - {name: seq, in: query, required: false, schema: {type: integer, format: int64, minimum: 0}}
          responses:
            "200": {description: The snapshot, content: {application/json: {schema: {$ref: "#/components/schemas/NodeSnapshot"}}}}
            "400": {$ref: "#/components/responses/Problem"}
            "401": {$ref: "#/components/responses/Problem"}
            "503": {$ref: "#/components/responses/Problem"}
      /commands:
        post:
          summary: Any command, as the control socket takes it.
          requestBody:
            required: true
            content: {application/json: {schema: {$ref: "#/components/schemas/NodeCommand"}}}
          responses:
            "200": {$ref: "#/components/responses/Reply"}
            "400": {$ref: "#/components/responses/Problem"}
            "401": {$ref: "#/components/responses/Problem"}
            "403": {$ref: "#/components/responses/Problem"}
            "409": {$ref: "#/components/responses/Reply"}
            "413": {$ref: "#/components/responses/Problem"}
            "422": {$ref: "#/components/responses/Reply"}
            "503": {$ref: "#/components/responses/ReplyOrProblem"}
            "507": {$ref: "#/components/responses/Reply"}
      /residents:
        post:
          summary: Enrol a resident.
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/ResidentSettings"}}}}
          responses: *commandResponses
      /residents/{id}:
        parameters: [{$ref: "#/components/parameters/resident"}]
        patch:
          summary: Change a resident's settings (those given).
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/ResidentSettings"}}}}
          responses: *commandResponses
        delete:
          summary: Remove a resident.
          responses: *commandResponses
      /residents/{id}/check-in:
        parameters: [{$ref: "#/components/parameters/resident"}]
        post:
          summary: Check a resident in ("I'm OK").
          responses: *commandResponses
      /alarms/silence:
        post:
          summary: Silence the alarms sounding now.
          responses: *commandResponses
      /alerts:
        post:
          summary: Raise an alert at this box (it goes on the air).
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/AlertRequest"}}}}
          responses: *commandResponses
      /alerts/{id}/acknowledge:
        parameters: [{$ref: "#/components/parameters/alert"}]
        post:
          summary: Answer a call for help heard from another box.
          responses: *commandResponses
      /calls/{call}/take:
        parameters:
          - {name: call, in: path, required: true, description: "The call's short code (T4821) or an alert's id (ORIGIN:COUNTER)",
             schema: {type: string, pattern: "^(T[0-9]{4}|[0-9a-f]{1,16}:[0-9]{1,10})$"}}
        post:
          summary: Take a call for help ("I'm on my way"); the call tree stops and everyone told learns who took it.
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/TakeRequest"}}}}
          responses: *commandResponses
      /calls/{call}/confirm:
        parameters:
          - {name: call, in: path, required: true, description: "A phone's unverified call: its short code (T4821) or id",
             schema: {type: string, pattern: "^(T[0-9]{4}|phone:[0-9a-f]{16})$"}}
        post:
          summary: Confirm a phone's unverified call for help (someone saw it is real); it is raised as this box's alert and goes on the air and to the hub.
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/TakeRequest"}}}}
          responses: *commandResponses
      /calls/{call}/dismiss:
        parameters:
          - {name: call, in: path, required: true, description: "A phone's unverified call: its short code (T4821) or id",
             schema: {type: string, pattern: "^(T[0-9]{4}|phone:[0-9a-f]{16})$"}}
        post:
          summary: Dismiss a phone's unverified call as not a call for help; it ends and everyone told is told.
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/TakeRequest"}}}}
          responses: *commandResponses
      /callbacks/take:
        post:
          summary: A webhook recipient takes a call with the token its message carried (no bearer token; the token is the proof).
          security: []
          requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/CallbackTakeRequest"}}}}
          responses: *commandResponses
      /alerts/{id}/cancel:
        parameters: [{$ref: "#/components/parameters/alert"}]
        post:
          summary: Cancel an alert raised here.
          responses: *commandResponses
    components:
      parameters:
        resident:
          {name: id, in: path, required: true,
           description: "The resident's id: 1 to 64 characters, no space. The pattern is the unreserved characters; any other id is reachable percent-encoded",
           schema: {type: string, pattern: "^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,63}$"}}
        alert:
          {name: id, in: path, required: true, description: "ORIGIN:COUNTER, the origin box's id in hex",
           schema: {type: string, pattern: "^[0-9a-f]{1,16}:[0-9]{1,10}$"}}
      securitySchemes:
        bearer: {type: http, scheme: bearer}
      responses:
        Problem:
          description: What went wrong (RFC 9457).
          content: {application/problem+json: {schema: {$ref: "#/components/schemas/Problem"}}}
        Reply:
          description: The node's answer.
          content: {application/json: {schema: {$ref: "#/components/schemas/NodeReply"}}}
        ReplyOrProblem:
          description: The node refused, or did not answer.
          content:
            application/json: {schema: {$ref: "#/components/schemas/NodeReply"}}
            application/problem+json: {schema: {$ref: "#/components/schemas/Problem"}}
      schemas:
        Problem:
          type: object
          required: [status, title, detail]
          properties: {status: {type: integer}, title: {type: string}, detail: {type: string}}
        NodeReply:
          type: object
          required: [ok]
          properties:
            ok: {type: boolean}
            sequence: {type: integer, format: int64}
            alert: {type: string}
            refusal: {type: string, enum: [invalid, conflict, unavailable, log-refused]}
            error: {type: string}
            unlogged: {type: boolean}
            status: {type: object}
        NodeCommand:
          type: object
          required: [command]
          properties:
            command:
              type: string
              enum: [ping, status, press, check-in, enrol-resident, update-resident, remove-resident, silence-alarms,
                     raise-alert, cancel-alert, acknowledge-alert, record-exposure, record-keys-published, reload-hub-links,
                     chat-send, chat-open, chat-connect, chat-disconnect, report-hazard, take-call, take-call-by-callback, test-calls, decide-phone-call]
            arguments: {type: object}
        TakeRequest:
          type: object
          required: [by]
          properties:
            by: {type: string, minLength: 1, maxLength: 64, description: "Who takes the call (a name or a phone number)"}
        CallbackTakeRequest:
          type: object
          required: [call, recipient, token]
          properties:
            call: {type: string, maxLength: 512, description: "The call's id, as the message's take.call gave it"}
            recipient: {type: string, maxLength: 256, description: "The webhook's address, as take.recipient gave it"}
            token: {type: string, pattern: "^[0-9a-f]{64}$", description: "take.token: good for this call and this recipient only"}
            by: {type: string, maxLength: 64, description: "Who takes the call (the webhook's host if not given)"}
        AlertRequest:
          type: object
          required: [kind, lifetimeMicroseconds, text]
          properties:
            kind: {type: string, enum: [sos, medical, fire, flood, evacuate, road-hazard, area-hazard, info]}
            severity: {type: string, enum: [info, warning, critical]}
            lifetimeMicroseconds: {type: integer, format: int64, minimum: 0}
            latitude: {type: number}
            longitude: {type: number}
            text: {type: string}
        ResidentSettings:
          type: object
          required: [id]
          properties:
            id: {type: string, pattern: "^[^ ]{1,64}$"}
            name: {type: string}
            mode: {type: string, enum: [time, pulse, "off"]}
            intervalMicroseconds: {type: integer, format: int64, minimum: 0}
            confirmMicroseconds: {type: integer, format: int64, minimum: 0}
            textToAlarmMicroseconds: {type: integer, format: int64, minimum: 0}
            alarmToNotifyMicroseconds: {type: integer, format: int64, minimum: 0}
            contacts:
              type: array
              items: {type: object, required: [name, address], properties: {name: {type: string}, address: {type: string}}}
            room: {type: string}
            ownAddress: {type: string}
            timeZone: {type: string}
            heartRateSensor: {type: string, description: "AA:BB:CC:DD:EE:FF, with /random for a random address; empty removes it"}
        NodeSnapshot:
          type: object
          required: [sequence, timeMicroseconds, nodeID, outputs, residents, alerts, exposures, messages, radio, hub, log, chats]
          properties:
            sequence: {type: integer, format: int64}
            timeMicroseconds: {type: integer, format: int64}
            nodeID: {type: string}
            past: {type: string}
            outputs:
              type: array
              items:
                type: object
                required: [line, pattern, reasons]
                properties:
                  line: {type: string, enum: [red, amber, green, blue, buzzer]}
                  pattern: {type: string}
                  reasons:
                    type: array
                    items:
                      type: object
                      required: [text, sequences]
                      properties: {text: {type: string}, sequences: {type: array, items: {type: integer, format: int64}}}
            residents:
              type: array
              items:
                type: object
                required: [id, name, room, mode, step, stepMicroseconds, checkIns, intervalMicroseconds, timeZone, paused]
                properties:
                  id: {type: string}
                  name: {type: string}
                  room: {type: string}
                  mode: {type: string, enum: [time, pulse, "off"]}
                  step: {type: string}
                  stepMicroseconds: {type: integer, format: int64}
                  next:
                    type: object
                    required: [step, dueMicroseconds]
                    properties: {step: {type: string}, dueMicroseconds: {type: integer, format: int64}}
                  lastCheckInMicroseconds: {type: integer, format: int64}
                  checkIns: {type: integer, format: int64}
                  intervalMicroseconds: {type: integer, format: int64}
                  timeZone: {type: string}
                  paused: {type: boolean}
                  sensor:
                    type: object
                    description: "The resident's heart-rate sensor; its address and reading only for staff and tokens"
                    required: [linked, bonded]
                    properties:
                      device: {type: string}
                      linked: {type: boolean}
                      bonded: {type: boolean, description: "The link was encrypted with the sensor's bond key; linked and not bonded is unbonded"}
                      beatsPerMinute: {type: number}
                      readingMicroseconds: {type: integer, format: int64}
                      contact: {type: string}
                      counted: {type: boolean}
            alerts:
              type: array
              items:
                type: object
                required: [id, kind, severity, category, raisedHere, hops, raisedMicroseconds, expiresMicroseconds, text]
                properties:
                  id: {type: string}
                  kind: {type: string}
                  severity: {type: string}
                  category: {type: string, enum: [help, hazard, notice]}
                  raisedHere: {type: boolean}
                  hops: {type: integer}
                  raisedMicroseconds: {type: integer, format: int64}
                  expiresMicroseconds: {type: integer, format: int64}
                  text: {type: string}
                  latitude: {type: number}
                  longitude: {type: number}
                  acknowledged: {type: string, enum: [here, elsewhere]}
            exposures:
              type: object
              required: [found, highRisk, recentHighRiskMicroseconds, keyFilesMatched, keyFilesRefused, keyFilesWaiting]
              properties:
                found: {type: integer}
                highRisk: {type: integer}
                recentHighRiskMicroseconds: {type: array, items: {type: integer, format: int64}}
                keyFilesMatched: {type: integer, format: int64}
                keyFilesRefused: {type: integer, format: int64}
                keyFilesWaiting: {type: integer}
            messages:
              type: object
              required: [pending, delivered, failedAttempts, unreachable]
              properties:
                pending: {type: integer}
                delivered: {type: integer, format: int64}
                failedAttempts: {type: integer, format: int64}
                unreachable: {type: integer}
            radio:
              type: object
              required: [state, adapter, sinceMicroseconds, devices, onAir]
              properties:
                state: {type: string}
                adapter: {type: string}
                sinceMicroseconds: {type: integer, format: int64}
                devices: {type: integer}
                framesAccepted: {type: integer, format: int64}
                framesForged: {type: integer, format: int64}
                onAir: {type: array, items: {type: string}}
                hciErrors: {type: integer, format: int64}
            hub:
              type: object
              required: [hub, syncedThrough, lastAcknowledgedMicroseconds, received]
              properties:
                hub: {type: string}
                syncedThrough: {type: integer, format: int64}
                lastAcknowledgedMicroseconds: {type: integer, format: int64}
                received: {type: integer, format: int64}
                problem: {type: string}
            log:
              type: object
              required: [events, undecodable, salvages, diskFull]
              properties:
                events: {type: integer, format: int64}
                usedBytes: {type: integer, format: int64}
                undecodable: {type: integer, format: int64}
                salvages: {type: integer, format: int64}
                check: {type: string}
                failure: {type: string}
                diskFull: {type: boolean}
                uptimeSeconds: {type: number}
            roadHazards:
              description: Road users, work zones and jams near the shelter, and the warning sounding now. A caller without a token or a session gets no positions.
              type: object
              required: [count, warningsStarted, hazards]
              properties:
                warning: {type: string}
                warningEndsMicroseconds: {type: integer, format: int64}
                count: {type: integer}
                warningsStarted: {type: integer, format: int64}
                hazards:
                  type: array
                  items:
                    type: object
                    required: [kind, source, latitude, longitude, lastMicroseconds, expiresMicroseconds]
                    properties:
                      kind: {type: string}
                      source: {type: string}
                      latitude: {type: number}
                      longitude: {type: number}
                      headingDegrees: {type: number}
                      speedMetersPerSecond: {type: number}
                      lastMicroseconds: {type: integer, format: int64}
                      expiresMicroseconds: {type: integer, format: int64}
                feed:
                  description: The regional MQTT hazard feed (absent when none is configured). The public view has no seen ids and no error text.
                  type: object
                  required: [connected, subscribed, state, vruActive, counters, seen]
                  properties:
                    connected: {type: boolean}
                    subscribed: {type: boolean}
                    broker: {type: string}
                    state: {type: string}
                    lastError: {type: string}
                    vruActive: {type: boolean}
                    counters:
                      type: object
                      additionalProperties: {type: integer, format: int64}
                    seen:
                      type: array
                      maxItems: 20
                      items:
                        type: object
                        required: [type, id, timeMicroseconds]
                        properties:
                          type: {type: string}
                          id: {type: string}
                          timeMicroseconds: {type: integer, format: int64}
            texts:
              description: The latest SMS that reached the box and what it made of them, newest first; empty in the public view.
              type: array
              items:
                type: object
                required: [sender, text, outcome, receivedMicroseconds]
                properties:
                  sender: {type: string}
                  text: {type: string}
                  outcome: {type: string}
                  receivedMicroseconds: {type: integer, format: int64}
            calls:
              description: Calls for help, open ones first, then the most recently ended. The public view has no summary and says only "someone" for who took a call.
              type: array
              items:
                type: object
                required: [code, id, kind, summary, startedMicroseconds, open, tier, pass, told]
                properties:
                  code: {type: string}
                  id: {type: string}
                  kind: {type: string, enum: [sos, medical, resident]}
                  summary: {type: string}
                  startedMicroseconds: {type: integer, format: int64}
                  open: {type: boolean}
                  takenBy: {type: string}
                  takenVia: {type: string}
                  takenMicroseconds: {type: integer, format: int64}
                  ended: {type: string}
                  tier: {type: integer}
                  pass: {type: integer}
                  told: {type: integer}
                  fromPhone: {type: boolean, description: "A phone's unverified call: staff confirm or dismiss it"}
                  phoneMessages: {type: integer, description: "Phones' sos and medical messages taken into it"}
                  confirmedAlert: {type: string, description: "Confirmed: the alert raised from it"}
                  phoneOthers: {type: array, items: {type: string}, description: "The latest other phones' messages taken into it (staff only)"}
            chats:
              description: Chats with phones and boxes; what peers wrote is unauthenticated. A caller without a token or a session (the public view) gets only the counts.
              type: object
              required: [devices, connected, unread, conversations]
              properties:
                devices: {type: integer}
                connected: {type: integer}
                unread: {type: integer}
                conversations:
                  type: array
                  maxItems: 16
                  items:
                    type: object
                    required: [device, connected, unread, lastActivityMicroseconds, messages]
                    properties:
                      device: {type: string}
                      connected: {type: boolean}
                      unread: {type: string}
                      lastActivityMicroseconds: {type: integer, format: int64}
                      messages:
                        type: array
                        maxItems: 5
                        items:
                          type: object
                          required: [timeMicroseconds, outgoing, text, category, delivered]
                          properties:
                            timeMicroseconds: {type: integer, format: int64}
                            outgoing: {type: boolean}
                            text: {type: string}
                            category: {type: string}
                            delivered: {type: boolean}
    """
}
