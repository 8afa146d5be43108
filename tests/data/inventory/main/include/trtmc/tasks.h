// Task names of the Task SDK.
class IAudioTextToText { static constexpr std::string_view kTask = "audio_text_to_text"; };
class IImageAudioToText { static constexpr std::string_view kTask = "image_audio_to_text"; };
class IImageAudioTextToTextSpeechResponse {
    static constexpr std::string_view kTask = "image_audio_text_to_text_speech_response";
};
class ITranscription { static constexpr const char* kTask = "transcription"; };
class ITextGeneration { static constexpr const char* kTask = "text_generation"; };
