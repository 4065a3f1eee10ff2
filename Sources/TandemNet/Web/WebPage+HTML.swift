extension WebPage {
    /// The page. Everything it shows is set with `textContent` by the scripts, never parsed as HTML.
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="referrer" content="no-referrer">
    <link rel="icon" href="data:,">
    <title>Tandem</title>
    <link rel="stylesheet" href="/app.css">
    </head>
    <body>
    <header>
      <img id="preview" alt="The host's preview image" hidden>
      <h1 id="title">Tandem</h1>
      <p id="subtitle"></p>
      <p id="meta"></p>
      <p id="status" role="status">Starting…</p>
    </header>
    <main>
      <section id="player">
        <video id="video" playsinline preload="auto"></video>
        <div id="controls">
          <button id="play" type="button" disabled>Play</button>
          <input id="seek" type="range" min="0" max="0" step="0.1" value="0" disabled aria-label="Position">
          <span id="clock">0:00 / 0:00</span>
          <select id="rate" disabled aria-label="Speed"><option value="1" selected>1×</option></select>
        </div>
        <div id="media">
          <label>Your copy of the file (several for a queue): <input id="file" type="file" accept="video/*,audio/*" multiple></label>
          <label>or a folder: <input id="folder" type="file" webkitdirectory></label>
          <button id="stream" type="button" hidden>Stream the host's file</button>
          <button id="fallback" type="button" hidden>Play from the fallback URL</button>
          <p id="mediaNote"></p>
        </div>
        <p id="sync"></p>
        <p class="keys">Keys: space play/pause · ← → 10 s · [ ] speed</p>
      </section>
      <aside>
        <h2>People</h2>
        <ul id="people"></ul>
        <h2>Notices</h2>
        <ul id="notices"></ul>
        <h2>Chat</h2>
        <ul id="chat"></ul>
        <form id="chatForm"><input id="chatText" maxlength="500" autocomplete="off" aria-label="Chat line" disabled>
          <button type="submit" disabled id="chatSend">Send</button></form>
      </aside>
    </main>
    <script src="/wire.js"></script>
    <script src="/grid.js"></script>
    <script src="/sync.js"></script>
    <script src="/steer.js"></script>
    <script src="/app.js"></script>
    </body>
    </html>
    """#

    static let stylesheet = #"""
    body { font: 15px/1.4 system-ui, sans-serif; margin: 0; background: #111; color: #eee; }
    header, main { padding: 0.6em 1em; }
    h1 { margin: 0; font-size: 1.4em; } h2 { font-size: 1em; margin: 1em 0 0.3em; color: #aaa; }
    header p { margin: 0.2em 0; } #status { color: #9cf; } .warn { color: #fc6; } .error { color: #f77; }
    main { display: flex; gap: 1.5em; flex-wrap: wrap; }
    #player { flex: 3 1 480px; } aside { flex: 1 1 240px; }
    video { width: 100%; max-height: 60vh; background: #000; }
    #controls { display: flex; gap: 0.5em; align-items: center; margin: 0.4em 0; }
    #seek { flex: 1; } ul { list-style: none; padding: 0; margin: 0; max-height: 12em; overflow-y: auto; }
    li { padding: 0.1em 0; } .keys, #sync { color: #888; font-size: 0.9em; }
    #chatForm { display: flex; gap: 0.3em; margin-top: 0.3em; } #chatText { flex: 1; }
    a { color: #9cf; } #preview { float: right; max-width: 240px; max-height: 135px; margin-left: 1em; }
    """#
}
