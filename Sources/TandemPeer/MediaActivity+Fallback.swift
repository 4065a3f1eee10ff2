import Foundation
import Tandem

extension MediaActivity {
    /// What to tell a joiner whose file is missing or unusable (`problem`): where to get the right one. `given` is the
    /// file the joiner named, nil when the host's file name was looked for.
    package static func whereToGet(_ activity: MediaActivity?, envelope: ActivityEnvelope?, problem: String, given: String?) -> String {
        let title = activity?.metadata.title ?? envelope?.metadata.title ?? "the shared media"
        let name = activity?.fileName
        var text = problem
        if given == nil, let name { text = "you need \"\(title)\" (\(name)) to join, and there is none here (\(problem))" }
        if let url = activity?.metadata.fallbackURL ?? envelope?.metadata.fallbackURL {
            text += " — get it from \(url.absoluteString), then: tandem join INVITE FILE"
        } else {
            text += " — ask the host where to get \"\(title)\"\(name.map { " (\($0))" } ?? "") (then: tandem join INVITE FILE), "
                + "or to share its copy with --share-media"
        }
        return text
    }
}
