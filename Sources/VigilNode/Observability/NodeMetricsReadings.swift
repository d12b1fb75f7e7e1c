import VigilRadio

extension Node {
    /// What the metrics sample reads of the components, gathered here so `NodeMetrics` holds none
    /// of them (decision 0008). On the loop.
    func metricsReadings() -> NodeMetrics.Readings {
        let logStatistics = log.statistics
        var r = NodeMetrics.Readings(commits: logStatistics.commits, flushes: logStatistics.flushes, shed: counters.shed, refused: counters.refused)
        if let hci = (radio as? HCIRadio)?.counters { r.hciErrors = hci.hardwareErrors &+ hci.commandTimeouts }
        r.frames = NodeMetrics.frameFigures(airAlerts.air.counters, relaysStarted: airAlerts.relaysStarted)
        r.hazardFeed = hazardFeed.status
        if configuration.alarmCentre != nil { r.alarmCentre = alarmCentre.status }
        if notifierTest.configured { r.notifierTestPasses = notifierTest.status.problem == nil }
        let callbacks = webhookCallbackStatus
        r.callbacksTaken = callbacks?.taken ?? 0
        r.callbacksRefused = callbacks?.refused ?? 0
        r.hubJoined = uplink.isJoined
        return r
    }
}
